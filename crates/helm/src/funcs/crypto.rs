//! Sprig's password and symmetric encryption helpers.

use std::collections::HashMap;
use std::sync::Mutex;

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
    ("derivePassword", derive_password),
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
        format!("{{SHA}}{}", base64::engine::general_purpose::STANDARD.encode(d))
    } else {
        bcrypt_hash(&s(&a[1]))?
    };
    Ok(Value::str(format!("{user}:{hash}")))
}

/// The scope of the Master Password algorithm, prefixed to every salt.
const MASTER_PASSWORD_SCOPE: &str = "com.lyndir.masterpassword";

/// Output templates per password type (Sprig's table, in its order).
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

/// The characters a template class letter stands for.
fn template_class(c: u8) -> &'static [u8] {
    match c {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

/// The scrypt key (N=32768, r=8, p=2, 64 bytes) of a master password and
/// salt. It depends only on the password and the user, so it is memoised:
/// charts derive many site passwords from one master, and scrypt with these
/// parameters is deliberately expensive.
fn master_key(password: &[u8], salt: &[u8]) -> Result<[u8; 64], String> {
    type Cache = HashMap<(Vec<u8>, Vec<u8>), [u8; 64]>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let id = (password.to_vec(), salt.to_vec());
    if let Some(k) =
        CACHE.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|c| c.get(&id))
    {
        return Ok(*k);
    }
    let params = scrypt::Params::new(15, 8, 2, 64).map_err(|e| e.to_string())?;
    let mut key = [0u8; 64];
    scrypt::scrypt(password, salt, &params, &mut key).map_err(|e| e.to_string())?;
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if cache.len() >= 64 {
        cache.clear();
    }
    cache.insert(id, key);
    Ok(key)
}

/// Sprig's `derivePassword`: the Master Password algorithm (scrypt key from
/// the master password and user, HMAC-SHA256 seed from site and counter,
/// characters picked from the type's templates). Unknown types and scrypt
/// failures are reported in the returned string, as Sprig does.
pub(crate) fn master_password(
    counter: u32,
    kind: &str,
    password: &str,
    user: &str,
    site: &str,
) -> String {
    use hmac::Mac as _;

    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SCOPE.as_bytes().to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let key = match master_key(password.as_bytes(), &salt) {
        Ok(k) => k,
        Err(e) => return format!("failed to derive password: {e}"),
    };
    let mut msg = MASTER_PASSWORD_SCOPE.as_bytes().to_vec();
    msg.extend_from_slice(&(site.len() as u32).to_be_bytes());
    msg.extend_from_slice(site.as_bytes());
    msg.extend_from_slice(&counter.to_be_bytes());
    let mut mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&key)
        .expect("HMAC accepts keys of any length");
    mac.update(&msg);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_class(class);
            char::from(chars[usize::from(seed[i + 1]) % chars.len()])
        })
        .collect()
}

/// The `uint32` counter parameter of `derivePassword`: an integer constant
/// (Go rejects values of other types, such as float64 from values files).
fn counter_arg(v: &Value) -> Result<u32, FnError> {
    match v {
        Value::Int(i) => u32::try_from(*i)
            .map_err(|_| FnError::Msg(format!("expected unsigned integer; found {i}"))),
        Value::Nil => Err(FnError::Msg("cannot assign nil to uint32".into())),
        other => Err(FnError::Msg(format!(
            "wrong type for value; expected uint32; got {}",
            other.type_name()
        ))),
    }
}

fn derive_password(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("derivePassword", a, 5)?;
    let counter = counter_arg(&a[0])?;
    Ok(Value::str(master_password(counter, &s(&a[1]), &s(&a[2]), &s(&a[3]), &s(&a[4]))))
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
    Ok(Value::str(base64::engine::general_purpose::STANDARD.encode(out)))
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

    #[test]
    fn derive_password_unknown_type() {
        assert_eq!(
            master_password(1, "unknown", "p", "u", "s"),
            "cannot find password template unknown"
        );
    }
}
