//! `engine state migrate`: the state moved to another place, or sealed another way, in one step
//! with the lock held on both sides. The source is left as it was; the spec's `[state]` is then
//! pointed at the new place.

use crate::args::MigrateArgs;
use crate::commands::{locate_state, location_arg, open_at};
use engine::spec::{EncryptionMethod, EncryptionSection};
use engine::{Backend, EngineError};
use miette::{IntoDiagnostic, Result, miette};

/// How the migrated state is sealed, from the command line; `None` when it does not say.
fn sealing(args: &MigrateArgs) -> Result<Option<Option<EncryptionSection>>> {
    let method = match args.to_encryption.as_deref() {
        None => return Ok(None),
        Some("none") => return Ok(Some(None)),
        Some("passphrase") => EncryptionMethod::Passphrase,
        Some("aws_kms") => EncryptionMethod::AwsKms,
        Some("gcp_kms") => EncryptionMethod::GcpKms,
        Some(other) => {
            return Err(miette!(
                "--to-encryption {other}: expected none, passphrase, aws_kms or gcp_kms"
            ));
        }
    };
    if method != EncryptionMethod::Passphrase && args.to_kms_key_id.is_none() {
        return Err(miette!("--to-encryption {} needs --to-kms-key-id", method.name()));
    }
    Ok(Some(Some(EncryptionSection {
        method,
        passphrase_env: args.to_passphrase_env.clone(),
        kms_key_id: args.to_kms_key_id.clone(),
    })))
}

pub async fn run(args: &MigrateArgs) -> Result<u8> {
    let (from_location, from_sealing, spec) = locate_state(&args.from)?;
    let to_location = match (&args.to, &spec) {
        (None, _) => from_location.clone(),
        (Some(to), Some(spec)) => spec.state_location(Some(to)).map_err(EngineError::from)?,
        (Some(to), None) => location_arg("--to", to)?,
    };
    // Unless the command line says otherwise, sealed as the spec seals it.
    let to_sealing = sealing(args)?.unwrap_or(from_sealing.clone());
    let in_place = to_location == from_location;
    let from = open_at(&from_location, from_sealing.as_ref()).await?;
    let to = open_at(&to_location, to_sealing.as_ref()).await?;
    let method = to_sealing.as_ref().map_or("clear", |s| s.method.name());
    let moved = tokio::task::spawn_blocking(move || migrate(from.as_ref(), to.as_ref(), in_place))
        .await
        .into_diagnostic()?
        .map_err(EngineError::from)?;
    println!(
        "State of `{}` (serial {}, {} resources) {} {} ({}).",
        moved.spec,
        moved.serial,
        moved.resources.len(),
        if in_place { "sealed anew at" } else { "copied to" },
        to_location,
        method,
    );
    if !in_place {
        println!(
            "The source is left as it was; point the spec's [state] at {to_location} (or pass \
             --state) before the next run."
        );
    }
    Ok(0)
}

/// Copies the state of `from` to `to` with both locks held (one when in place). A destination
/// that already holds a state is refused, unless it is the same place.
fn migrate(
    from: &dyn Backend,
    to: &dyn Backend,
    in_place: bool,
) -> Result<engine::StateDocument, engine_state::StateError> {
    let _source = from.lock("migrate")?;
    let mut doc = from.load()?.ok_or_else(|| engine_state::StateError::Store {
        location: from.location(),
        message: "there is no state to migrate".into(),
    })?;
    if in_place {
        let previous = doc.serial;
        doc.serial += 1;
        to.save_over(&doc, previous)?;
        return Ok(doc);
    }
    let _destination = to.lock("migrate")?;
    if let Some(there) = to.load()? {
        return Err(engine_state::StateError::Store {
            location: to.location(),
            message: format!(
                "it already holds a state (`{}`, serial {}): nothing was written",
                there.spec, there.serial
            ),
        });
    }
    to.save_over(&doc, 0)?;
    Ok(doc)
}
