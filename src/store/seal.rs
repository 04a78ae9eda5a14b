//! Secrets at rest: AES-256-GCM with a key from the environment (`SHORTLIST_STATE_KEY`).
//!
//! ring's AEAD is used because ring is already built for rustls: no second crypto stack.
//! Each sealed value is `version (1) | key id (8) | nonce (12) | ciphertext | tag (16)`,
//! with a fresh random nonce, and the row it belongs to (person and API) as associated
//! data: a ciphertext copied into another person's row does not open.
//!
//! Keys rotate: a new `SHORTLIST_STATE_KEY` seals from now on, while the keys it replaces,
//! listed in `SHORTLIST_STATE_PREVIOUS_KEYS`, still open what they sealed (each value
//! names its key by id); the store seals such a value again under the new key when it is
//! next used, so the previous keys can be dropped once every row has been used.

use super::StoreError;
use base64::Engine;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

/// The environment variable that holds the key: 32 bytes, base64 or 64 hex digits.
pub const KEY_ENV: &str = "SHORTLIST_STATE_KEY";
/// The environment variable that lists keys replaced by a rotation (same format, comma or
/// space separated): they open what they sealed, and seal nothing.
pub const PREVIOUS_KEYS_ENV: &str = "SHORTLIST_STATE_PREVIOUS_KEYS";

const VERSION: u8 = 1;
const KEY_ID_LEN: usize = 8;

/// Seals secrets with one key, and opens them with it or with the keys it replaced.
pub struct Sealer {
    key: LessSafeKey,
    key_id: [u8; KEY_ID_LEN],
    /// Keys replaced by a rotation: they open, never seal.
    previous: Vec<([u8; KEY_ID_LEN], LessSafeKey)>,
    rng: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sealer(key {})", hex::encode(self.key_id))
    }
}

impl Sealer {
    /// A sealer for a 32-byte key given as base64 (standard or URL-safe) or hex. The error
    /// never repeats the value.
    pub fn from_text(text: &str) -> Result<Sealer, StoreError> {
        let t = text.trim();
        let bytes = if t.len() == 64 && t.chars().all(|c| c.is_ascii_hexdigit()) {
            hex::decode(t).ok()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(t)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(t))
                .ok()
        };
        match bytes {
            Some(b) if b.len() == 32 => Sealer::from_bytes(&b),
            _ => Err(StoreError::Key(format!(
                "{KEY_ENV} must be 32 bytes, as base64 or 64 hex digits (e.g. `openssl rand -base64 32`)"
            ))),
        }
    }

    /// The sealer of `SHORTLIST_STATE_KEY` with the keys `SHORTLIST_STATE_PREVIOUS_KEYS`
    /// lists, or `None` when the first is not set.
    pub fn from_env() -> Result<Option<Sealer>, StoreError> {
        let current = match std::env::var(KEY_ENV) {
            Ok(v) if !v.trim().is_empty() => Sealer::from_text(&v)?,
            _ => return Ok(None),
        };
        let previous = std::env::var(PREVIOUS_KEYS_ENV).unwrap_or_default();
        let keys: Vec<&str> = previous
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|k| !k.is_empty())
            .collect();
        let mut sealer = current;
        for (i, k) in keys.into_iter().enumerate() {
            let old = Sealer::from_text(k).map_err(|_| {
                StoreError::Key(format!(
                    "{PREVIOUS_KEYS_ENV}: key {} must be 32 bytes, as base64 or 64 hex digits",
                    i + 1
                ))
            })?;
            sealer = sealer.with_previous(old);
        }
        Ok(Some(sealer))
    }

    /// This sealer, also opening what `old` sealed (a key this one replaced).
    pub fn with_previous(mut self, old: Sealer) -> Sealer {
        if old.key_id != self.key_id && !self.previous.iter().any(|(id, _)| *id == old.key_id) {
            self.previous.push((old.key_id, old.key));
        }
        self
    }

    fn from_bytes(b: &[u8]) -> Result<Sealer, StoreError> {
        let key = UnboundKey::new(&AES_256_GCM, b)
            .map_err(|_| StoreError::Key("the state key is not a valid AES-256 key".into()))?;
        let digest = Sha256::digest([b"shortlist-state-key-id:".as_slice(), b].concat());
        let mut key_id = [0u8; KEY_ID_LEN];
        key_id.copy_from_slice(&digest[..KEY_ID_LEN]);
        Ok(Sealer {
            key: LessSafeKey::new(key),
            key_id,
            previous: Vec::new(),
            rng: SystemRandom::new(),
        })
    }

    /// Whether `sealed` was sealed by a key this one replaced (so it should be sealed
    /// again under the current key).
    pub fn is_stale(&self, sealed: &[u8]) -> bool {
        sealed.len() > KEY_ID_LEN && sealed[1..1 + KEY_ID_LEN] != self.key_id
    }

    /// `plain` sealed for the row named by `context`.
    pub fn seal(&self, context: &str, plain: &[u8]) -> Result<Vec<u8>, StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .map_err(|_| StoreError::Key("no randomness for a nonce".into()))?;
        let mut out = Vec::with_capacity(1 + KEY_ID_LEN + NONCE_LEN + plain.len() + 16);
        out.push(VERSION);
        out.extend_from_slice(&self.key_id);
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut body,
            )
            .map_err(|_| StoreError::Key("sealing failed".into()))?;
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The plain text of a value sealed for `context`.
    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>, StoreError> {
        let head = 1 + KEY_ID_LEN + NONCE_LEN;
        if sealed.len() < head + 16 || sealed[0] != VERSION {
            return Err(StoreError::Key("a stored secret is damaged".into()));
        }
        let id = &sealed[1..1 + KEY_ID_LEN];
        let key = if id == self.key_id {
            &self.key
        } else if let Some((_, k)) = self.previous.iter().find(|(p, _)| p == id) {
            k
        } else {
            return Err(StoreError::Key(format!(
                "a stored secret was sealed with another {KEY_ENV} (key {}, this one {}); \
                 list the key it was sealed with in {PREVIOUS_KEYS_ENV}",
                hex::encode(id),
                hex::encode(self.key_id)
            )));
        };
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&sealed[1 + KEY_ID_LEN..head]);
        let mut body = sealed[head..].to_vec();
        let plain = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut body,
            )
            .map_err(|_| {
                StoreError::Key(
                    "a stored secret does not open: damaged or moved to another row".into(),
                )
            })?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="; // 32 ASCII bytes

    #[test]
    fn round_trip_and_binding_to_the_row() {
        let s = Sealer::from_text(KEY).unwrap();
        let sealed = s.seal("alice\0github", b"gho_secret").unwrap();
        assert!(!sealed.windows(10).any(|w| w == b"gho_secret"));
        assert_eq!(s.open("alice\0github", &sealed).unwrap(), b"gho_secret");
        assert!(
            s.open("bob\0github", &sealed).is_err(),
            "another row's context"
        );
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(s.open("alice\0github", &flipped).is_err());
        assert_ne!(
            sealed,
            s.seal("alice\0github", b"gho_secret").unwrap(),
            "fresh nonce"
        );
    }

    #[test]
    fn a_rotated_key_still_opens_what_it_sealed_and_seals_nothing() {
        let old = Sealer::from_text(KEY).unwrap();
        let sealed_before = old.seal("x", b"v").unwrap();
        let new = Sealer::from_text(&"ab".repeat(32))
            .unwrap()
            .with_previous(Sealer::from_text(KEY).unwrap());
        assert_eq!(new.open("x", &sealed_before).unwrap(), b"v");
        assert!(new.is_stale(&sealed_before));
        let sealed_now = new.seal("x", b"v").unwrap();
        assert!(!new.is_stale(&sealed_now));
        assert!(
            old.open("x", &sealed_now).is_err(),
            "sealed under the new key"
        );
    }

    #[test]
    fn another_key_says_so_and_bad_keys_are_refused_without_echo() {
        let a = Sealer::from_text(KEY).unwrap();
        let b = Sealer::from_text(&"ab".repeat(32)).unwrap();
        let e = b.open("x", &a.seal("x", b"v").unwrap()).unwrap_err();
        assert!(e.to_string().contains("another SHORTLIST_STATE_KEY"), "{e}");
        let e = Sealer::from_text("short-secret-value").unwrap_err();
        assert!(!e.to_string().contains("short-secret-value"), "{e}");
    }
}
