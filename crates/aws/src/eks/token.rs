//! Bearer tokens for EKS API servers, as `aws eks get-token` makes them:
//! `k8s-aws-v1.` + base64url(presigned STS `GetCallerIdentity` URL) with the cluster name in the
//! signed header `x-k8s-aws-id`. The API server's authenticator calls the URL to learn who the
//! caller is. A token is good for 15 minutes; the URL's own expiry is 60 s past signing, which
//! the authenticator tolerates as EKS documents.

use aws_credential_types::Credentials;
use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{
    SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign,
};
use aws_sigv4::sign::v4;
use base64::Engine as _;
use std::time::{Duration, SystemTime};

/// The token prefix the authenticator expects.
pub const TOKEN_PREFIX: &str = "k8s-aws-v1.";

/// A token for `cluster`, signed with `credentials` for STS in `region` at `now`.
pub fn eks_token(
    cluster: &str,
    region: &str,
    credentials: &Credentials,
    now: SystemTime,
) -> Result<String, String> {
    let host = format!("sts.{region}.amazonaws.com");
    let url = format!("https://{host}/?Action=GetCallerIdentity&Version=2011-06-15");
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(60));
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let headers = [("host", host.as_str()), ("x-k8s-aws-id", cluster)];
    let request = SignableRequest::new("GET", &url, headers.into_iter(), SignableBody::empty())
        .map_err(|e| format!("request to sign: {e}"))?;
    let (instructions, _) =
        sign(request, &params).map_err(|e| format!("signing: {e}"))?.into_parts();
    let mut http_request =
        http::Request::builder().method("GET").uri(&url).body(()).map_err(|e| e.to_string())?;
    instructions.apply_to_request_http1x(&mut http_request);
    let signed_url = http_request.uri().to_string();
    Ok(format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signed_url)
    ))
}

/// Mints tokens from a credential chain (the SDK config's provider), fresh for each call.
pub struct EksTokens {
    credentials: aws_credential_types::provider::SharedCredentialsProvider,
    region: String,
}

impl EksTokens {
    pub fn new(
        credentials: aws_credential_types::provider::SharedCredentialsProvider,
        region: &str,
    ) -> Self {
        EksTokens { credentials, region: region.to_string() }
    }

    /// A token for `cluster`, made now.
    pub async fn token(&self, cluster: &str) -> Result<String, String> {
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| format!("AWS credentials: {e}"))?;
        eks_token(cluster, &self.region, &credentials, SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sigv4::sign::v4::{calculate_signature, generate_signing_key};
    use sha2::{Digest, Sha256};

    fn decode(token: &str) -> String {
        let b64 = token.strip_prefix(TOKEN_PREFIX).expect("prefix");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b64)
            .expect("base64url without padding");
        String::from_utf8(bytes).unwrap()
    }

    fn query(url: &str) -> Vec<(String, String)> {
        url.split_once('?')
            .unwrap()
            .1
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    #[test]
    fn the_token_is_a_presigned_get_caller_identity_with_the_cluster_header() {
        // 2026-12-02T10:00:00Z
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_205_600);
        let creds = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        );
        let token = eks_token("aws-0", "eu-west-3", &creds, now).unwrap();
        assert!(!token.contains('='), "no padding: {token}");
        let url = decode(&token);
        assert!(url.starts_with("https://sts.eu-west-3.amazonaws.com/?"), "{url}");
        let q = query(&url);
        let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("Action"), Some("GetCallerIdentity"));
        assert_eq!(get("Version"), Some("2011-06-15"));
        assert_eq!(get("X-Amz-Algorithm"), Some("AWS4-HMAC-SHA256"));
        assert_eq!(
            get("X-Amz-Credential"),
            Some("AKIDEXAMPLE%2F20261202%2Feu-west-3%2Fsts%2Faws4_request")
        );
        assert_eq!(get("X-Amz-Date"), Some("20261202T100000Z"));
        assert_eq!(get("X-Amz-Expires"), Some("60"));
        assert_eq!(get("X-Amz-SignedHeaders"), Some("host%3Bx-k8s-aws-id"));

        // The signature, recomputed from the SigV4 definition (canonical request -> string to
        // sign -> HMAC chain), matches.
        let mut unsigned: Vec<(String, String)> =
            q.iter().filter(|(k, _)| k != "X-Amz-Signature").cloned().collect();
        unsigned.sort();
        let canonical_query: Vec<String> =
            unsigned.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let canonical_request = format!(
            "GET\n/\n{}\nhost:sts.eu-west-3.amazonaws.com\nx-k8s-aws-id:aws-0\n\nhost;x-k8s-aws-id\n{}",
            canonical_query.join("&"),
            hex(&Sha256::digest(b""))
        );
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n20261202T100000Z\n20261202/eu-west-3/sts/aws4_request\n{}",
            hex(&Sha256::digest(canonical_request.as_bytes()))
        );
        let key = generate_signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            now,
            "eu-west-3",
            "sts",
        );
        let expected = calculate_signature(key, string_to_sign.as_bytes());
        assert_eq!(get("X-Amz-Signature"), Some(expected.as_str()));
    }

    #[test]
    fn tokens_differ_per_cluster() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_205_600);
        let creds = Credentials::new("AKID", "SECRET", None, None, "test");
        let a = eks_token("aws-0", "eu-west-3", &creds, now).unwrap();
        let b = eks_token("aws-1", "eu-west-3", &creds, now).unwrap();
        assert_ne!(a, b);
        assert!(!decode(&a).contains("SECRET"));
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
