//! An OAuth2 access token from Application Default Credentials: what GKE's API server takes as
//! a bearer token (`gcloud container clusters get-credentials` does the same through a plugin).

use engine::Secret;

/// A fresh access token for the environment's Google credentials.
pub async fn access_token() -> Result<Secret, String> {
    let credentials = google_cloud_auth::credentials::Builder::default()
        .build_access_token_credentials()
        .map_err(|e| format!("Google credentials: {e}"))?;
    let token =
        credentials.access_token().await.map_err(|e| format!("Google access token: {e}"))?;
    Ok(Secret::new(token.token))
}
