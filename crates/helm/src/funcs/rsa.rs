//! RSA-2048 keys like Go's `rsa.GenerateKey(rand.Reader, 2048)` (what Sprig's `genCA`,
//! `genSignedCert`, `genSelfSignedCert` and `genPrivateKey` make), found several times faster
//! than aws-lc's own generator, and their PKCS#1 v1.5 SHA-256 signatures (the certificates').
//!
//! Why by hand: aws-lc (like Go and OpenSSL) draws a fresh random candidate for every try and
//! trial-divides each one by hundreds of small primes with bignum divisions; finding a 1024-bit
//! prime takes some 500 tries, so most of a key's time goes to discarding composites. Here each
//! prime is searched incrementally from one random odd start: the start's residues modulo every
//! prime below 2^16 are computed once (a bignum division per machine word of primes), a window
//! of the following odd numbers is sieved with plain integer arithmetic, and only the survivors
//! (about one in ten) are tested, two at a time: a Fermat test each in one call of aws-lc's
//! constant-time paired exponentiation (which runs both at the cost of one on processors with
//! AVX-512 IFMA, the path aws-lc takes for RSA-2048's CRT), then six Miller-Rabin rounds, paired
//! the same way, on what passes (aws-lc's own `BN_primality_test` blinds its rounds against
//! timing and costs as much as all the other tests together). Searching consecutive odd numbers
//! from a secret start is what OpenSSL's generator does too; the exponentiations are
//! constant-time, and what the timing shows (how far from the start the prime lies, the factors
//! of two in `p - 1`) says next to nothing of the prime. No crate offers this: aws-lc and ring
//! do not expose a faster generator, and the pure-Rust `rsa` crate is slower still.
//!
//! The randomness comes from the `rand` crate's generator (seeded by the operating system), and
//! signatures are made here with the CRT exponentiations in one paired call, then checked with
//! the public key before they are returned: aws-lc's own RNG seeds itself with CPU jitter
//! entropy on its first use in a process, which alone takes longer than rendering a chart. The
//! keys sign the certificates of the render that made them; no one can ask for signatures to
//! time, so aws-lc's blinding is not missed.
//!
//! The key is what every RSA library accepts: public exponent 65537, a modulus of exactly 2048
//! bits, primes of 1024 bits with their two top bits set and more than 2^924 apart, `e` prime to
//! both `p - 1` and `q - 1`, `d = e⁻¹ mod lcm(p - 1, q - 1)` above 2^1024 (FIPS 186-4's bounds),
//! and its CRT values. Secret bignums are cleared when freed.

use std::sync::OnceLock;

use aws_lc_sys as ffi;
use rand::RngCore as _;
use sha2::Digest as _;

use super::certs::{der_read, der_tlv};

const MODULUS_BITS: u32 = 2048;
const PRIME_BITS: u32 = MODULUS_BITS / 2;
const PUBLIC_EXPONENT: u64 = 65537;
/// Odd numbers sieved from one random start: a 1024-bit prime comes every 355 odd numbers on
/// average, so a window holds none about once in 10^5 draws (then a new start is drawn).
const WINDOW: usize = 4096;
/// Miller-Rabin rounds on a candidate that passed the Fermat test: FIPS 186-5 (table B.1) asks
/// five for the 1024-bit primes of an RSA-2048 key; an even number fills the paired calls.
const MILLER_RABIN_ROUNDS: usize = 6;
/// The sieve's primes: every odd prime below this bound.
const SIEVE_BOUND: usize = 1 << 16;
/// SHA-256's `DigestInfo` prefix (RFC 8017, 9.2 note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
    0x00, 0x04, 0x20,
];

/// Why a key could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum RsaError {
    /// aws-lc failed (out of memory).
    #[error("RSA: {0} failed")]
    Bignum(&'static str),
    /// The DER is no PKCS#1 RSA private key.
    #[error("not a PKCS#1 RSA private key")]
    Malformed,
    /// The key's signature does not verify with its own public key.
    #[error("the RSA key is inconsistent: its signature does not verify")]
    Inconsistent,
}

/// An RSA private key with its CRT values.
pub struct RsaKey {
    n: Bn,
    e: Bn,
    d: Bn,
    p: Bn,
    q: Bn,
    dp: Bn,
    dq: Bn,
    qinv: Bn,
    /// PKCS#1 `RSAPublicKey` DER, what a certificate's key info holds.
    public_der: Vec<u8>,
}

// SAFETY: the bignums are owned by the key alone and never shared; aws-lc's bignum functions
// keep no thread-local state tied to them.
unsafe impl Send for RsaKey {}

/// One of an RSA-2048 key's two primes (1024 bits, its two top bits set, `p - 1` prime to
/// 65537), made apart from the key so that a key's two primes can be searched on two threads.
pub struct Prime(Bn);

// SAFETY: as for RsaKey: the bignum is owned by the prime alone.
unsafe impl Send for Prime {}

impl Prime {
    /// A new random prime.
    pub fn generate() -> Result<Prime, RsaError> {
        Prime::generate_unless(|| false)?.ok_or(RsaError::Bignum("the prime search"))
    }

    /// A new random prime, unless `stop` says otherwise first: it is asked before each test
    /// (every fraction of a millisecond), and the search ends with `None` when it answers true.
    pub fn generate_unless(mut stop: impl FnMut() -> bool) -> Result<Option<Prime>, RsaError> {
        Ok(random_prime(&Ctx::new()?, &mut stop)?.map(Prime))
    }
}

impl RsaKey {
    /// A new RSA-2048 key.
    pub fn generate() -> Result<RsaKey, RsaError> {
        loop {
            if let Some(key) = RsaKey::from_primes(Prime::generate()?, Prime::generate()?)? {
                return Ok(key);
            }
        }
    }

    /// The key of two primes; `None` when they are too close or `d` falls below FIPS's bound
    /// (both vanishingly rare: other primes are to be drawn).
    pub fn from_primes(a: Prime, b: Prime) -> Result<Option<RsaKey>, RsaError> {
        let (a, b) = (a.0, b.0);
        if !far_apart(&a, &b)? {
            return Ok(None);
        }
        let (p, q) = if a.cmp(&b) > 0 { (a, b) } else { (b, a) };
        from_primes(p, q, &Ctx::new()?)
    }

    /// Reads a PKCS#1 `RSAPrivateKey`.
    pub fn from_pkcs1_der(der: &[u8]) -> Result<RsaKey, RsaError> {
        let (tag, body, _) = der_read(der).ok_or(RsaError::Malformed)?;
        if tag != 0x30 {
            return Err(RsaError::Malformed);
        }
        let mut rest = body;
        let mut ints = Vec::new();
        while !rest.is_empty() {
            let (tag, value, next) = der_read(rest).ok_or(RsaError::Malformed)?;
            if tag != 0x02 {
                return Err(RsaError::Malformed);
            }
            ints.push(value);
            rest = next;
        }
        // version 0 (two primes) and the eight values.
        if ints.len() != 9 || ints[0] != [0] {
            return Err(RsaError::Malformed);
        }
        let bn = |i: usize| Bn::from_bytes(ints[i]);
        let key = RsaKey {
            n: bn(1)?,
            e: bn(2)?,
            d: bn(3)?,
            p: bn(4)?,
            q: bn(5)?,
            dp: bn(6)?,
            dq: bn(7)?,
            qinv: bn(8)?,
            public_der: Vec::new(),
        };
        Ok(RsaKey { public_der: public_der(&key.n, &key.e), ..key })
    }

    /// The key as PKCS#1 `RSAPrivateKey` DER (Sprig's "RSA PRIVATE KEY").
    pub fn to_pkcs1_der(&self) -> Vec<u8> {
        let mut body = der_integer(&[0]);
        for part in [&self.n, &self.e, &self.d, &self.p, &self.q, &self.dp, &self.dq, &self.qinv] {
            body.extend(der_integer(&part.to_bytes()));
        }
        der_tlv(0x30, &body)
    }

    /// PKCS#1 `RSAPublicKey` DER.
    pub fn public_der(&self) -> &[u8] {
        &self.public_der
    }

    /// The RSASSA-PKCS1-v1_5 signature of `msg` with SHA-256, checked against the public key.
    pub fn sign_pkcs1_sha256(&self, msg: &[u8]) -> Result<Vec<u8>, RsaError> {
        let k = self.n.bits().div_ceil(8) as usize;
        let digest = sha2::Sha256::digest(msg);
        let t_len = SHA256_DIGEST_INFO.len() + digest.len();
        if k < t_len + 11 {
            return Err(RsaError::Malformed);
        }
        let mut em = vec![0xff; k];
        em[0] = 0;
        em[1] = 1;
        em[k - t_len - 1] = 0;
        em[k - t_len..k - digest.len()].copy_from_slice(&SHA256_DIGEST_INFO);
        em[k - digest.len()..].copy_from_slice(&digest);
        let m = Bn::from_bytes(&em)?;
        let ctx = Ctx::new()?;
        let (mont_p, mont_q, mont_n) =
            (Mont::new(&self.p, &ctx)?, Mont::new(&self.q, &ctx)?, Mont::new(&self.n, &ctx)?);
        let (mp, mq) = (Bn::new()?, Bn::new()?);
        // SAFETY: valid bignums and context owned by this call; null quotients are allowed.
        unsafe {
            let null = std::ptr::null_mut();
            check(ffi::BN_div(null, mp.0, m.0, self.p.0, ctx.0), "BN_div")?;
            check(ffi::BN_div(null, mq.0, m.0, self.q.0, ctx.0), "BN_div")?;
        }
        // s1 = m^dp mod p and s2 = m^dq mod q in one call.
        let (s1, s2) =
            exp_pair((&mp, &self.dp, &self.p, &mont_p), (&mq, &self.dq, &self.q, &mont_q), &ctx)?;
        let (h, hq, sig, check_m) = (Bn::new()?, Bn::new()?, Bn::new()?, Bn::new()?);
        // SAFETY: valid bignums, Montgomery form and context owned by this call; outputs are
        // distinct from inputs.
        unsafe {
            // s = s2 + q · (qinv · (s1 - s2) mod p)
            check(ffi::BN_mod_sub(h.0, s1.0, s2.0, self.p.0, ctx.0), "BN_mod_sub")?;
            check(ffi::BN_mod_mul(hq.0, h.0, self.qinv.0, self.p.0, ctx.0), "BN_mod_mul")?;
            check(ffi::BN_mul(h.0, hq.0, self.q.0, ctx.0), "BN_mul")?;
            check(ffi::BN_add(sig.0, h.0, s2.0), "BN_add")?;
            // The signature opens to the message with the public key, or nothing leaves.
            check(
                ffi::BN_mod_exp_mont(check_m.0, sig.0, self.e.0, self.n.0, ctx.0, mont_n.0),
                "BN_mod_exp_mont",
            )?;
            if ffi::BN_cmp(check_m.0, m.0) != 0 {
                return Err(RsaError::Inconsistent);
            }
        }
        sig.to_padded_bytes(k)
    }
}

/// PKCS#1 `RSAPublicKey` DER of `(n, e)`.
fn public_der(n: &Bn, e: &Bn) -> Vec<u8> {
    let mut body = der_integer(&n.to_bytes());
    body.extend(der_integer(&e.to_bytes()));
    der_tlv(0x30, &body)
}

/// `p` and `q` differ by more than 2^(1024-100) (FIPS 186-4 B.3.3 step 5.4).
fn far_apart(p: &Bn, q: &Bn) -> Result<bool, RsaError> {
    let diff = Bn::new()?;
    // SAFETY: all three are valid bignums owned by this thread.
    check(unsafe { ffi::BN_sub(diff.0, p.0, q.0) }, "BN_sub")?;
    Ok(diff.bits() > PRIME_BITS - 100)
}

/// The key of primes `p > q`; `None` when `d` falls below FIPS's bound (vanishingly rare: new
/// primes are drawn).
fn from_primes(p: Bn, q: Bn, ctx: &Ctx) -> Result<Option<RsaKey>, RsaError> {
    let e = Bn::from_word(PUBLIC_EXPONENT)?;
    let n = Bn::new()?;
    let p1 = p.minus_one()?;
    let q1 = q.minus_one()?;
    let (product, gcd, lcm) = (Bn::new()?, Bn::new()?, Bn::new()?);
    let (dp, dq, qinv) = (Bn::new()?, Bn::new()?, Bn::new()?);
    let null = std::ptr::null_mut();
    // SAFETY: every pointer is a valid bignum or context owned by this thread; the outputs are
    // distinct from the inputs; a null quotient is allowed by BN_div.
    unsafe {
        check(ffi::BN_mul(n.0, p.0, q.0, ctx.0), "BN_mul")?;
        check(ffi::BN_mul(product.0, p1.0, q1.0, ctx.0), "BN_mul")?;
        check(ffi::BN_gcd(gcd.0, p1.0, q1.0, ctx.0), "BN_gcd")?;
        check(ffi::BN_div(lcm.0, null, product.0, gcd.0, ctx.0), "BN_div")?;
    }
    let Some(d) = exponent_inverse(&lcm)? else { return Ok(None) };
    // SAFETY: as above.
    unsafe {
        check(ffi::BN_div(null, dp.0, d.0, p1.0, ctx.0), "BN_div")?;
        check(ffi::BN_div(null, dq.0, d.0, q1.0, ctx.0), "BN_div")?;
        if ffi::BN_mod_inverse(qinv.0, q.0, p.0, ctx.0).is_null() {
            return Err(RsaError::Bignum("BN_mod_inverse"));
        }
    }
    if n.bits() != MODULUS_BITS || d.bits() <= PRIME_BITS {
        return Ok(None);
    }
    let public_der = public_der(&n, &e);
    Ok(Some(RsaKey { n, e, d, p, q, dp, dq, qinv, public_der }))
}

/// `e⁻¹ mod λ` for the public exponent `e`, or `None` when `e` divides `λ`
/// (the primes' sieve rules it out). As `d = (1 + k·λ) / e` with `k = −λ⁻¹ mod e`, only a word
/// inverse is needed, taken by Fermat (`λ^(e−2) mod e`, the same steps whatever `λ` is):
/// aws-lc's `BN_mod_inverse` works through the whole 2048-bit modulus and takes 0.6 ms.
fn exponent_inverse(lambda: &Bn) -> Result<Option<Bn>, RsaError> {
    let e = PUBLIC_EXPONENT;
    let r = lambda.mod_word(e)?;
    if r == 0 {
        return Ok(None);
    }
    let (mut inverse, mut power, mut bits) = (1u64, r, e - 2);
    while bits > 0 {
        if bits & 1 == 1 {
            inverse = inverse * power % e;
        }
        power = power * power % e;
        bits >>= 1;
    }
    let k = e - inverse;
    let d = lambda.copy()?;
    // SAFETY: a valid bignum owned by this thread.
    unsafe {
        check(ffi::BN_mul_word(d.0, k), "BN_mul_word")?;
        check(ffi::BN_add_word(d.0, 1), "BN_add_word")?;
        if ffi::BN_div_word(d.0, e) != 0 {
            return Err(RsaError::Bignum("BN_div_word"));
        }
    }
    Ok(Some(d))
}

/// A random 1024-bit prime with its two top bits set and `p - 1` prime to 65537, unless
/// `stop` answers true before a test.
fn random_prime(ctx: &Ctx, stop: &mut dyn FnMut() -> bool) -> Result<Option<Bn>, RsaError> {
    let primes = sieve_primes();
    let mut composite = vec![false; WINDOW];
    loop {
        let mut bytes = [0u8; PRIME_BITS as usize / 8];
        rand::rng().fill_bytes(&mut bytes);
        bytes[0] |= 0xc0;
        bytes[bytes.len() - 1] |= 1;
        let start = Bn::from_bytes(&bytes)?;
        composite.fill(false);
        // Candidate k is start + 2k: it is divisible by s when 2k ≡ -start (mod s).
        for group in &primes.groups {
            let r = start.mod_word(group.product)?;
            for &s in &primes.primes[group.range.clone()] {
                let s = s as u64;
                let first = ((s - r % s) % s) * s.div_ceil(2) % s;
                mark(&mut composite, first as usize, s as usize);
            }
        }
        // p - 1 divisible by 65537 makes e not invertible: 2k ≡ 1 - start (mod 65537).
        let s = PUBLIC_EXPONENT;
        let r = start.mod_word(s)?;
        mark(&mut composite, ((s + 1 - r) % s * s.div_ceil(2) % s) as usize, s as usize);

        // The survivors, two at a time through one Fermat test each (a random base to the
        // power n - 1): aws-lc runs two 1024-bit exponentiations at the cost of about one where
        // the processor has AVX-512 IFMA. What passes is confirmed by Miller-Rabin.
        let survivors: Vec<usize> = (0..WINDOW).filter(|k| !composite[*k]).collect();
        for pair in survivors.chunks(2) {
            let first = candidate(&start, pair[0])?;
            let second = match pair.get(1) {
                Some(k) => candidate(&start, *k)?,
                None => candidate(&start, pair[0])?,
            };
            if first.bits() != PRIME_BITS || second.bits() != PRIME_BITS {
                break;
            }
            if stop() {
                return Ok(None);
            }
            let (a, b) = fermat_pair(&first, &second, ctx)?;
            for (passed, c) in [(a, first), (b, second)] {
                if passed && c.is_probable_prime(ctx)? {
                    return Ok(Some(c));
                }
            }
        }
    }
}

/// A random base in `[2, m - 2]` for the tests of `m` (a random number of `m`'s size reduced
/// modulo `m - 3`: the slight bias does not matter to Fermat or Miller-Rabin).
fn random_base(m: &Bn, ctx: &Ctx) -> Result<Bn, RsaError> {
    let mut bytes = vec![0u8; m.bits().div_ceil(8) as usize];
    rand::rng().fill_bytes(&mut bytes);
    let r = Bn::from_bytes(&bytes)?;
    let m3 = m.minus_one()?;
    let base = Bn::new()?;
    // SAFETY: valid, distinct bignums and a context owned by this thread.
    unsafe {
        check(ffi::BN_sub_word(m3.0, 2), "BN_sub_word")?;
        check(ffi::BN_div(std::ptr::null_mut(), base.0, r.0, m3.0, ctx.0), "BN_div")?;
        check(ffi::BN_add_word(base.0, 2), "BN_add_word")?;
    }
    Ok(base)
}

/// `start + 2k`.
fn candidate(start: &Bn, k: usize) -> Result<Bn, RsaError> {
    let c = start.copy()?;
    // SAFETY: a valid bignum owned by this thread.
    check(unsafe { ffi::BN_add_word(c.0, 2 * k as u64) }, "BN_add_word")?;
    Ok(c)
}

/// `base^exponent mod modulus` for two triples in one call of aws-lc's constant-time paired
/// exponentiation (both at the cost of about one on processors with AVX-512 IFMA).
fn exp_pair(
    first: (&Bn, &Bn, &Bn, &Mont),
    second: (&Bn, &Bn, &Bn, &Mont),
    ctx: &Ctx,
) -> Result<(Bn, Bn), RsaError> {
    let (r1, r2) = (Bn::new()?, Bn::new()?);
    let ((a1, e1, m1, mont1), (a2, e2, m2, mont2)) = (first, second);
    // SAFETY: valid bignums, the Montgomery forms of the two moduli and a scratch context, all
    // owned by this thread; the outputs are fresh bignums distinct from the inputs.
    check(
        unsafe {
            ffi::BN_mod_exp_mont_consttime_x2(
                r1.0, a1.0, e1.0, m1.0, mont1.0, r2.0, a2.0, e2.0, m2.0, mont2.0, ctx.0,
            )
        },
        "BN_mod_exp_mont_consttime_x2",
    )?;
    Ok((r1, r2))
}

/// Whether `a^(m-1) ≡ 1 (mod m)` for a random base `a`, for both odd moduli at once.
fn fermat_pair(m1: &Bn, m2: &Bn, ctx: &Ctx) -> Result<(bool, bool), RsaError> {
    let mont1 = Mont::new(m1, ctx)?;
    let mont2 = Mont::new(m2, ctx)?;
    let (e1, e2) = (m1.minus_one()?, m2.minus_one()?);
    let (a1, a2) = (random_base(m1, ctx)?, random_base(m2, ctx)?);
    let (r1, r2) = exp_pair((&a1, &e1, m1, &mont1), (&a2, &e2, m2, &mont2), ctx)?;
    Ok((r1.is_one(), r2.is_one()))
}

fn mark(composite: &mut [bool], first: usize, step: usize) {
    for c in composite.iter_mut().skip(first).step_by(step) {
        *c = true;
    }
}

/// The odd primes below [`SIEVE_BOUND`], grouped so that each group's product fits a machine
/// word: one bignum division per group gives the residues of all its primes.
struct SievePrimes {
    primes: Vec<u32>,
    groups: Vec<Group>,
}

struct Group {
    product: u64,
    range: std::ops::Range<usize>,
}

fn sieve_primes() -> &'static SievePrimes {
    static PRIMES: OnceLock<SievePrimes> = OnceLock::new();
    PRIMES.get_or_init(|| {
        let mut is_composite = vec![false; SIEVE_BOUND];
        let mut primes = Vec::new();
        for i in 3..SIEVE_BOUND {
            if i % 2 == 0 || is_composite[i] {
                continue;
            }
            primes.push(i as u32);
            for m in (i * i..SIEVE_BOUND).step_by(2 * i) {
                is_composite[m] = true;
            }
        }
        let mut groups = Vec::new();
        let mut start = 0;
        let mut product = 1u64;
        for (i, &s) in primes.iter().enumerate() {
            match product.checked_mul(s as u64) {
                Some(next) => product = next,
                None => {
                    groups.push(Group { product, range: start..i });
                    start = i;
                    product = s as u64;
                }
            }
        }
        groups.push(Group { product, range: start..primes.len() });
        SievePrimes { primes, groups }
    })
}

fn check(ok: i32, what: &'static str) -> Result<(), RsaError> {
    if ok == 1 { Ok(()) } else { Err(RsaError::Bignum(what)) }
}

/// An aws-lc bignum, cleared and freed when dropped.
struct Bn(*mut ffi::BIGNUM);

impl Bn {
    fn new() -> Result<Bn, RsaError> {
        // SAFETY: BN_new has no preconditions; null is checked.
        let bn = unsafe { ffi::BN_new() };
        if bn.is_null() { Err(RsaError::Bignum("BN_new")) } else { Ok(Bn(bn)) }
    }

    fn from_word(w: u64) -> Result<Bn, RsaError> {
        let bn = Bn::new()?;
        // SAFETY: a valid bignum.
        check(unsafe { ffi::BN_set_word(bn.0, w) }, "BN_set_word")?;
        Ok(bn)
    }

    fn from_bytes(big_endian: &[u8]) -> Result<Bn, RsaError> {
        let bn = Bn::new()?;
        // SAFETY: a valid bignum and a byte slice of the given length.
        if unsafe { ffi::BN_bin2bn(big_endian.as_ptr(), big_endian.len(), bn.0) }.is_null() {
            return Err(RsaError::Bignum("BN_bin2bn"));
        }
        Ok(bn)
    }

    /// Big-endian bytes, left-padded with zeros to `len`.
    fn to_padded_bytes(&self, len: usize) -> Result<Vec<u8>, RsaError> {
        let mut out = vec![0u8; len];
        // SAFETY: `out` holds `len` bytes.
        check(unsafe { ffi::BN_bn2bin_padded(out.as_mut_ptr(), len, self.0) }, "BN_bn2bin_padded")?;
        Ok(out)
    }

    fn copy(&self) -> Result<Bn, RsaError> {
        let out = Bn::new()?;
        // SAFETY: valid, distinct bignums.
        if unsafe { ffi::BN_copy(out.0, self.0) }.is_null() {
            return Err(RsaError::Bignum("BN_copy"));
        }
        Ok(out)
    }

    fn minus_one(&self) -> Result<Bn, RsaError> {
        let out = self.copy()?;
        // SAFETY: a valid bignum.
        check(unsafe { ffi::BN_sub_word(out.0, 1) }, "BN_sub_word")?;
        Ok(out)
    }

    fn mod_word(&self, w: u64) -> Result<u64, RsaError> {
        // SAFETY: a valid bignum; w is non-zero.
        let r = unsafe { ffi::BN_mod_word(self.0, w) };
        if r == u64::MAX { Err(RsaError::Bignum("BN_mod_word")) } else { Ok(r) }
    }

    /// Miller-Rabin with [`MILLER_RABIN_ROUNDS`] random bases, two bases per paired
    /// exponentiation. Only the number of factors of two in `n - 1` shapes the running time.
    fn is_probable_prime(&self, ctx: &Ctx) -> Result<bool, RsaError> {
        let n1 = self.minus_one()?;
        let mont = Mont::new(self, ctx)?;
        let d = Bn::new()?;
        // SAFETY: valid bignums, Montgomery form of `self` and scratch context, all owned by
        // this thread; outputs are distinct from inputs.
        let twos = unsafe {
            let twos = ffi::BN_count_low_zero_bits(n1.0);
            check(ffi::BN_rshift(d.0, n1.0, twos), "BN_rshift")?;
            twos
        };
        for _ in 0..MILLER_RABIN_ROUNDS / 2 {
            let (b1, b2) = (random_base(self, ctx)?, random_base(self, ctx)?);
            let (y1, y2) = exp_pair((&b1, &d, self, &mont), (&b2, &d, self, &mont), ctx)?;
            for y in [&y1, &y2] {
                if !self.witnesses_probable_prime(y, &n1, twos, ctx)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The rest of a Miller-Rabin round from `y = b^d`: `y` is 1 or -1, or becomes -1 within
    /// `twos - 1` squarings.
    fn witnesses_probable_prime(
        &self,
        y: &Bn,
        n1: &Bn,
        twos: i32,
        ctx: &Ctx,
    ) -> Result<bool, RsaError> {
        // SAFETY: valid bignums and context owned by this thread; the square is written to a
        // bignum distinct from its input.
        unsafe {
            if ffi::BN_is_one(y.0) == 1 || ffi::BN_cmp(y.0, n1.0) == 0 {
                return Ok(true);
            }
            let mut z = y.copy()?;
            for _ in 1..twos {
                let square = Bn::new()?;
                check(ffi::BN_mod_mul(square.0, z.0, z.0, self.0, ctx.0), "BN_mod_mul")?;
                z = square;
                if ffi::BN_cmp(z.0, n1.0) == 0 {
                    return Ok(true);
                }
                if ffi::BN_is_one(z.0) == 1 {
                    return Ok(false);
                }
            }
        }
        Ok(false)
    }

    fn is_one(&self) -> bool {
        // SAFETY: a valid bignum.
        unsafe { ffi::BN_is_one(self.0) == 1 }
    }

    fn bits(&self) -> u32 {
        // SAFETY: a valid bignum.
        unsafe { ffi::BN_num_bits(self.0) }
    }

    fn cmp(&self, other: &Bn) -> i32 {
        // SAFETY: valid bignums.
        unsafe { ffi::BN_cmp(self.0, other.0) }
    }

    /// Big-endian bytes without leading zeros.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.bits().div_ceil(8) as usize];
        // SAFETY: `out` holds BN_num_bytes bytes, what BN_bn2bin writes.
        let written = unsafe { ffi::BN_bn2bin(self.0, out.as_mut_ptr()) };
        out.truncate(written);
        out
    }
}

impl Drop for Bn {
    fn drop(&mut self) {
        // SAFETY: owned since BN_new; freed once.
        unsafe { ffi::BN_clear_free(self.0) }
    }
}

/// aws-lc's Montgomery form of one odd modulus.
struct Mont(*mut ffi::BN_MONT_CTX);

impl Mont {
    fn new(modulus: &Bn, ctx: &Ctx) -> Result<Mont, RsaError> {
        // SAFETY: a valid odd modulus and context; null is checked.
        let mont = unsafe { ffi::BN_MONT_CTX_new_for_modulus(modulus.0, ctx.0) };
        if mont.is_null() {
            Err(RsaError::Bignum("BN_MONT_CTX_new_for_modulus"))
        } else {
            Ok(Mont(mont))
        }
    }
}

impl Drop for Mont {
    fn drop(&mut self) {
        // SAFETY: owned since BN_MONT_CTX_new_for_modulus; freed once.
        unsafe { ffi::BN_MONT_CTX_free(self.0) }
    }
}

/// An aws-lc bignum context (scratch space), one per key.
struct Ctx(*mut ffi::BN_CTX);

impl Ctx {
    fn new() -> Result<Ctx, RsaError> {
        // SAFETY: no preconditions; null is checked.
        let ctx = unsafe { ffi::BN_CTX_new() };
        if ctx.is_null() { Err(RsaError::Bignum("BN_CTX_new")) } else { Ok(Ctx(ctx)) }
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        // SAFETY: owned since BN_CTX_new; freed once.
        unsafe { ffi::BN_CTX_free(self.0) }
    }
}

/// A DER INTEGER of a non-negative big-endian number.
fn der_integer(be: &[u8]) -> Vec<u8> {
    let trimmed: &[u8] = match be.iter().position(|b| *b != 0) {
        Some(i) => &be[i..],
        None => &[0],
    };
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if trimmed[0] & 0x80 != 0 {
        content.push(0);
    }
    content.extend_from_slice(trimmed);
    der_tlv(0x02, &content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{self, KeyPair as _, RsaKeyPair};

    #[test]
    fn a_key_is_a_valid_rsa_2048_key_and_signs_as_aws_lc_does() {
        let key = RsaKey::generate().unwrap();
        let der = key.to_pkcs1_der();
        // aws-lc checks the key whole on parsing (n = pq, d·e ≡ 1, the CRT values).
        let theirs = RsaKeyPair::from_der(&der).unwrap();
        assert_eq!(theirs.public_modulus_len() * 8, 2048);
        assert_eq!(theirs.public_key().as_ref(), key.public_der());
        // e = 65537, Go's and Sprig's.
        assert!(key.public_der().ends_with(&[0x02, 0x03, 0x01, 0x00, 0x01]));
        // PKCS#1 v1.5 is deterministic: the same bytes as aws-lc's signature, which verifies.
        let msg = b"the same bytes";
        let ours = key.sign_pkcs1_sha256(msg).unwrap();
        let mut sig = vec![0; theirs.public_modulus_len()];
        let rng = aws_lc_rs::rand::SystemRandom::new();
        theirs.sign(&signature::RSA_PKCS1_SHA256, &rng, msg, &mut sig).unwrap();
        assert_eq!(ours, sig);
        signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, key.public_der())
            .verify(msg, &ours)
            .unwrap();
        // What is written is read back to the same key.
        let again = RsaKey::from_pkcs1_der(&der).unwrap();
        assert_eq!(again.to_pkcs1_der(), der);
        assert_eq!(again.sign_pkcs1_sha256(msg).unwrap(), ours);
    }

    #[test]
    fn an_inconsistent_key_signs_nothing_and_garbage_is_refused() {
        let der = RsaKey::generate().unwrap().to_pkcs1_der();
        let mut key = RsaKey::from_pkcs1_der(&der).unwrap();
        key.dp = Bn::from_word(12345).unwrap();
        assert!(matches!(key.sign_pkcs1_sha256(b"x"), Err(RsaError::Inconsistent)));
        assert!(matches!(RsaKey::from_pkcs1_der(&der[..40]), Err(RsaError::Malformed)));
        assert!(matches!(
            RsaKey::from_pkcs1_der(&[0x30, 0x03, 0x02, 0x01, 0x00]),
            Err(RsaError::Malformed)
        ));
    }

    #[test]
    fn keys_differ() {
        let a = RsaKey::generate().unwrap().to_pkcs1_der();
        let b = RsaKey::generate().unwrap().to_pkcs1_der();
        assert_ne!(a, b);
    }

    #[test]
    fn a_search_told_to_stop_stops_before_its_next_test() {
        assert!(Prime::generate_unless(|| true).unwrap().is_none());
        let mut asked = 0;
        let stopped = Prime::generate_unless(|| {
            asked += 1;
            asked == 3
        });
        // Either a prime came within two tests, or the search ended when told, at the third.
        match stopped.unwrap() {
            Some(prime) => assert!(asked <= 2 && prime.0.bits() == PRIME_BITS),
            None => assert_eq!(asked, 3),
        }
    }

    #[test]
    fn the_sieve_leaves_exactly_the_numbers_without_a_small_factor() {
        // The marking rule on a small start: start + 2k is marked iff a sieve prime divides it.
        let primes = sieve_primes();
        assert_eq!(primes.primes[..5], [3, 5, 7, 11, 13]);
        assert_eq!(primes.primes.len(), 6541);
        let covered: usize = primes.groups.iter().map(|g| g.range.len()).sum();
        assert_eq!(covered, primes.primes.len());
        for g in &primes.groups {
            let product =
                primes.primes[g.range.clone()].iter().map(|&s| s as u128).product::<u128>();
            assert_eq!(product, g.product as u128);
        }
        let start = 1_000_001u64;
        let mut composite = vec![false; 512];
        for &s in &primes.primes[..40] {
            let s = s as u64;
            let r = start % s;
            mark(&mut composite, (((s - r % s) % s) * s.div_ceil(2) % s) as usize, s as usize);
        }
        for (k, marked) in composite.iter().enumerate() {
            let v = start + 2 * k as u64;
            let divisible = primes.primes[..40].iter().any(|&s| v.is_multiple_of(s as u64));
            assert_eq!(*marked, divisible, "{v}");
        }
    }

    #[test]
    fn the_exponents_inverse_is_the_one_aws_lc_finds() {
        let ctx = Ctx::new().unwrap();
        let e = Bn::from_word(PUBLIC_EXPONENT).unwrap();
        for i in 0..40 {
            let mut bytes = [0u8; 256];
            rand::rng().fill_bytes(&mut bytes);
            bytes[255] &= 0xfe;
            let lambda = Bn::from_bytes(&bytes).unwrap();
            if i == 0 {
                // A multiple of e: no inverse.
                check(unsafe { ffi::BN_mul_word(lambda.0, PUBLIC_EXPONENT) }, "").unwrap();
            }
            let theirs = Bn::new().unwrap();
            let invertible =
                unsafe { !ffi::BN_mod_inverse(theirs.0, e.0, lambda.0, ctx.0).is_null() };
            assert_eq!(invertible, i != 0);
            match exponent_inverse(&lambda).unwrap() {
                Some(ours) => assert!(invertible && ours.cmp(&theirs) == 0, "draw {i}"),
                None => assert!(!invertible, "draw {i}"),
            }
        }
    }

    #[test]
    fn integers_are_encoded_as_der_wants() {
        assert_eq!(der_integer(&[0]), [0x02, 0x01, 0x00]);
        assert_eq!(der_integer(&[0x7f]), [0x02, 0x01, 0x7f]);
        assert_eq!(der_integer(&[0x80]), [0x02, 0x02, 0x00, 0x80]);
        assert_eq!(der_integer(&[0x00, 0x01, 0x00]), [0x02, 0x02, 0x01, 0x00]);
    }
}
