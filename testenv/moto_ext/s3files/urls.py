"""S3 Files' base URL and paths (every operation of the model)."""

from .responses import S3FilesResponse

url_bases = [r"https?://s3files\.(.+)\.amazonaws\.com"]

url_paths = {
    "{0}/file-systems$": S3FilesResponse.dispatch,
    "{0}/file-systems/(?P<fileSystemId>[^/]+)$": S3FilesResponse.dispatch,
    "{0}/file-systems/(?P<fileSystemId>[^/]+)/policy$": S3FilesResponse.dispatch,
    "{0}/file-systems/(?P<fileSystemId>[^/]+)/synchronization-configuration$": S3FilesResponse.dispatch,
    "{0}/mount-targets$": S3FilesResponse.dispatch,
    "{0}/mount-targets/(?P<mountTargetId>[^/]+)$": S3FilesResponse.dispatch,
    "{0}/access-points$": S3FilesResponse.dispatch,
    "{0}/access-points/(?P<accessPointId>[^/]+)$": S3FilesResponse.dispatch,
    "{0}/resource-tags/(?P<resourceId>[^/]+)$": S3FilesResponse.dispatch,
}
