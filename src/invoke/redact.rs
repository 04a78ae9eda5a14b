//! Masking the secrets of one call in what it returns, and in the logs while it runs.
//!
//! A [`Redactor`] holds the secrets a call read or obtained ([`super::mask`] matches them
//! in every spelling); every outcome of the call passes through it. What it learns it also
//! puts on the logs' list ([`super::log_secrets`]): for the process's life for secrets the
//! catalog config names, and for obtained tokens until the call ends or the token is no
//! longer good, whichever is later.

pub use super::log_secrets::{
    log_secret_count, redact_for_logs, register_secret_for_logs, LogLine, LogWriter,
};
use super::log_secrets::{register_for_logs, LOG_SECRETS};
pub use super::mask::MASK;
use super::mask::{forms, Mask};
use std::time::Instant;

/// Replaces known secret values, in any spelling, with `[REDACTED]`.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    mask: Mask,
    /// The forms this redactor holds on the logs' list until it is dropped (the call it
    /// serves ends), or until they expire if later.
    held: Held,
}
/// Forms held on the logs' list by one redactor: let go when it is dropped. A clone holds
/// nothing (the original lets go).
#[derive(Debug, Default)]
struct Held(Vec<String>);

impl Clone for Held {
    fn clone(&self) -> Held {
        Held(Vec::new())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let mut s = LOG_SECRETS.write().unwrap_or_else(|e| e.into_inner());
        for form in self.0.drain(..) {
            s.release(&form);
        }
        s.prune(Instant::now());
    }
}

impl Redactor {
    /// Registers a secret (and the base64 cores of it), here and for the logs for as
    /// long as the process runs: for secrets the catalog config names.
    pub fn add(&mut self, secret: &str) {
        for form in forms(secret) {
            if self.mask.insert(&form) {
                register_for_logs(&form);
            }
        }
    }

    /// Registers a secret here, and for the logs until `until` or until this redactor is
    /// dropped, whichever is later: for tokens obtained at run time, masked in every log
    /// line while the call that uses them runs and forgotten once they are no longer good.
    pub fn add_until(&mut self, secret: &str, until: Instant) {
        for form in forms(secret) {
            if self.mask.insert(&form) {
                LOG_SECRETS
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .hold(&form, until);
                self.held.0.push(form);
            }
        }
    }

    /// Registers a secret (and its base64 cores) here only, not for the logs.
    pub fn add_local(&mut self, secret: &str) {
        for form in forms(secret) {
            self.mask.insert(&form);
        }
    }

    /// Registers exactly this text (no derived forms), here and for the logs.
    pub fn add_form(&mut self, form: &str) {
        if self.mask.insert(form) {
            register_for_logs(form);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.mask.is_empty()
    }

    /// How many forms are registered.
    pub fn len(&self) -> usize {
        self.mask.len()
    }

    /// `text` with every registered secret masked, whatever its spelling.
    pub fn redact(&self, text: &str) -> String {
        self.mask.redact(text)
    }

    /// Like [`redact`](Self::redact), for text that was cut off: a tail that is the
    /// beginning of a secret is masked too.
    pub fn redact_cut(&self, text: &str) -> String {
        self.mask.redact_cut(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn obtained_tokens_leave_the_logs_when_their_call_ends_and_they_expire() {
        let soon = Instant::now() + std::time::Duration::from_millis(50);
        let mut r = Redactor::default();
        r.add_until("expiring-t0ken-0001", soon);
        assert_eq!(redact_for_logs("t: expiring-t0ken-0001"), "t: [REDACTED]");
        assert_eq!(
            r.redact("expiring-t0ken-0001"),
            "[REDACTED]",
            "the call masks it"
        );
        std::thread::sleep(std::time::Duration::from_millis(60));
        let mut other = Redactor::default();
        other.add_until(
            "another-t0ken-0002",
            Instant::now() + std::time::Duration::from_secs(60),
        );
        assert_eq!(
            redact_for_logs("t: expiring-t0ken-0001"),
            "t: [REDACTED]",
            "still masked while its call runs"
        );
        drop(r);
        assert_eq!(
            redact_for_logs("t: expiring-t0ken-0001"),
            "t: expiring-t0ken-0001",
            "forgotten once its call ended and it expired"
        );
        drop(other);
        assert_eq!(
            redact_for_logs("another-t0ken-0002"),
            "[REDACTED]",
            "a token still good stays masked"
        );
    }
}
