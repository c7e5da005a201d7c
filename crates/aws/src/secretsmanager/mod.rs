//! Secrets Manager: put and get a secret string by name. Values never appear in logs, errors or
//! `Debug` output.

use crate::clients::AwsClients;
use crate::error::SdkResult;
use aws_sdk_secretsmanager::types::Tag;
use engine::KindError;
use std::fmt;

/// A secret value; `Debug` shows only its length.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    pub fn new(value: impl Into<String>) -> Self {
        SecretValue(value.into())
    }

    /// The value itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretValue(<{} bytes>)", self.0.len())
    }
}

/// What a put did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    Created,
    Updated,
    /// The secret already held this value: nothing was written.
    Unchanged,
}

/// Stores `value` under `name`, creating the secret or adding a version to it. Writes nothing
/// when the current value is already `value`.
#[tracing::instrument(skip(clients, value), fields(secret = name))]
pub async fn put_secret_string(
    clients: &AwsClients,
    name: &str,
    value: &SecretValue,
) -> Result<PutOutcome, KindError> {
    if get_secret_string(clients, name).await?.as_ref() == Some(value) {
        return Ok(PutOutcome::Unchanged);
    }
    let sm = &clients.secrets;
    let put = sm.put_secret_value().secret_id(name).secret_string(value.expose());
    let op = "secretsmanager:PutSecretValue";
    if put.send().await.or_absent(op, &["ResourceNotFoundException"])?.is_some() {
        tracing::info!("secret updated");
        return Ok(PutOutcome::Updated);
    }
    let tag = Tag::builder().key(engine::TAG_MANAGED_BY).value(engine::MANAGED_BY).build();
    let create = sm.create_secret().name(name).secret_string(value.expose()).tags(tag);
    match create.send().await.api("secretsmanager:CreateSecret") {
        Ok(_) => {
            tracing::info!("secret created");
            Ok(PutOutcome::Created)
        }
        // Created concurrently since the first call: add the value as a new version.
        Err(e) if e.has_code("ResourceExistsException") => {
            let put = sm.put_secret_value().secret_id(name).secret_string(value.expose());
            put.send().await.api(op)?;
            Ok(PutOutcome::Updated)
        }
        Err(e) => Err(e),
    }
}

/// The current string value of secret `name`, or `None` when there is no such secret.
#[tracing::instrument(skip(clients), fields(secret = name))]
pub async fn get_secret_string(
    clients: &AwsClients,
    name: &str,
) -> Result<Option<SecretValue>, KindError> {
    let call = clients.secrets.get_secret_value().secret_id(name);
    let op = "secretsmanager:GetSecretValue";
    let found = call.send().await.or_absent(op, &["ResourceNotFoundException"])?;
    Ok(found.and_then(|out| out.secret_string().map(SecretValue::new)))
}

/// Deletes secret `name` at once (no recovery window, so the name can be used again), if it
/// exists.
#[tracing::instrument(skip(clients), fields(secret = name))]
pub async fn delete_secret(clients: &AwsClients, name: &str) -> Result<(), KindError> {
    let call = clients.secrets.delete_secret().secret_id(name).force_delete_without_recovery(true);
    let op = "secretsmanager:DeleteSecret";
    call.send().await.or_absent(op, &["ResourceNotFoundException"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let v = SecretValue::new("hunter2");
        assert_eq!(format!("{v:?}"), "SecretValue(<7 bytes>)");
        assert_eq!(v.expose(), "hunter2");
    }
}
