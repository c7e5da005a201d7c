//! Sprig's password and symmetric encryption helpers.

use aws_lc_rs::cipher::{
    AES_256, DecryptionContext, EncryptionContext, PaddedBlockDecryptingKey,
    PaddedBlockEncryptingKey, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use base64::Engine as _;
use rand::Rng as _;

use super::{Func, arity, s, to_i64};
use crate::template::{Exec, FnError};
use crate::value::Value;

type R = Result<Value, FnError>;

pub(super) static FUNCS: &[(&str, Func)] = &[
    ("bcrypt", bcrypt_fn),
    ("htpasswd", htpasswd),
    ("encryptAES", encrypt_aes),
    ("decryptAES", decrypt_aes),
    ("randInt", rand_int),
    ("hello", hello),
];

fn bcrypt_hash(pass: &str) -> Result<String, FnError> {
    bcrypt::hash_with_result(pass, 10)
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
        .map_err(|e| FnError::Msg(format!("failed to encrypt string with bcrypt: {e}")))
}

fn bcrypt_fn(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("bcrypt", a, 1)?;
    Ok(Value::str(bcrypt_hash(&s(&a[0]))?))
}

fn htpasswd(_: &mut Exec<'_>, a: &[Value]) -> R {
    if a.len() < 2 {
        return Err(FnError::Msg(format!(
            "wrong number of args for htpasswd: want at least 2 got {}",
            a.len()
        )));
    }
    let user = s(&a[0]);
    if user.contains(':') {
        return Ok(Value::str(format!("invalid username: {user}")));
    }
    let algo = a.get(2).map(s).unwrap_or_else(|| "bcrypt".into());
    let hash = if algo == "sha" {
        use sha1::Digest as _;
        let d = sha1::Sha1::digest(s(&a[1]).as_bytes());
        format!(
            "{{SHA}}{}",
            base64::engine::general_purpose::STANDARD.encode(d)
        )
    } else {
        bcrypt_hash(&s(&a[1]))?
    };
    Ok(Value::str(format!("{user}:{hash}")))
}

fn aes_key(password: &str) -> Result<UnboundCipherKey, FnError> {
    let mut key = [0u8; 32];
    let p = password.as_bytes();
    let n = p.len().min(32);
    key[..n].copy_from_slice(&p[..n]);
    UnboundCipherKey::new(&AES_256, &key).map_err(|_| FnError::Msg("invalid AES key".into()))
}

fn encrypt_aes(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("encryptAES", a, 2)?;
    let key = PaddedBlockEncryptingKey::cbc_pkcs7(aes_key(&s(&a[0]))?)
        .map_err(|_| FnError::Msg("AES setup failed".into()))?;
    let mut iv = [0u8; 16];
    rand::rng().fill(&mut iv[..]);
    let mut data = s(&a[1]).into_bytes();
    key.less_safe_encrypt(&mut data, EncryptionContext::Iv128(FixedLength::from(iv)))
        .map_err(|_| FnError::Msg("AES encryption failed".into()))?;
    let mut out = iv.to_vec();
    out.extend_from_slice(&data);
    Ok(Value::str(
        base64::engine::general_purpose::STANDARD.encode(out),
    ))
}

fn decrypt_aes(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("decryptAES", a, 2)?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(s(&a[1]).as_bytes())
        .map_err(|e| FnError::Msg(e.to_string()))?;
    if raw.len() < 16 || raw.len() % 16 != 0 {
        return Err(FnError::Msg("ciphertext too short".into()));
    }
    let key = PaddedBlockDecryptingKey::cbc_pkcs7(aes_key(&s(&a[0]))?)
        .map_err(|_| FnError::Msg("AES setup failed".into()))?;
    let mut iv = [0u8; 16];
    iv.copy_from_slice(&raw[..16]);
    let mut data = raw[16..].to_vec();
    let plain = key
        .decrypt(&mut data, DecryptionContext::Iv128(FixedLength::from(iv)))
        .map_err(|_| FnError::Msg("AES decryption failed".into()))?;
    Ok(Value::str(String::from_utf8_lossy(plain)))
}

fn rand_int(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randInt", a, 2)?;
    let (min, max) = (to_i64(&a[0]), to_i64(&a[1]));
    if max <= min {
        return Err(FnError::Msg("invalid argument to Intn".into()));
    }
    Ok(Value::Int(rand::rng().random_range(min..max)))
}

fn hello(_: &mut Exec<'_>, _a: &[Value]) -> R {
    Ok(Value::str("Hello!"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::NoLookup;
    use crate::template::TemplateSet;

    #[test]
    fn aes_roundtrip_and_bcrypt() {
        let set = TemplateSet::default();
        let mut e = Exec::new(&set, &NoLookup);
        let enc = encrypt_aes(&mut e, &[Value::str("secretkey"), Value::str("plaintext")]).unwrap();
        let dec = decrypt_aes(&mut e, &[Value::str("secretkey"), enc]).unwrap();
        assert_eq!(dec.as_str(), Some("plaintext"));
        let h = htpasswd(&mut e, &[Value::str("u"), Value::str("p")]).unwrap();
        let h = h.as_str().unwrap().to_string();
        assert!(h.starts_with("u:$2a$10$"), "{h}");
        assert!(bcrypt::verify("p", &h[2..]).unwrap());
    }
}
