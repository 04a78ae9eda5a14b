//! Masking secrets in every spelling they come back in.
//!
//! A secret sent upstream returns in many shapes: as written; inside a JSON string, where
//! an encoder may escape `/` as `\/` (PHP does by default) or any character as `\uXXXX`
//! (JavaScript's for non-ASCII, some for everything), possibly escaped twice when JSON
//! sits inside JSON; percent-encoded (`%2F`, `%2f`, or `+` for a space) when a server
//! echoes a URL or a form; in base64, as in a `Basic` authorization header echoed back.
//!
//! Rather than listing spellings (there are exponentially many: each character can be
//! spelled independently), a [`Redactor`] matches a secret character by character, each
//! character in any of its spellings, so `s\u0065kr%69t\/1` is found as `sekrit/1`. Base64
//! cannot be matched that way (one character of the secret spreads over two of the
//! encoding), so the stable core of the secret's base64 at each of the three alignments is
//! registered as a secret of its own (in both alphabets), and is then matched in every
//! spelling too.
//!
//! Logs: every secret a [`Redactor`] learns is also added to a process-wide list that
//! [`LogWriter`] applies to each log line before it reaches stderr, so no log level of
//! this crate or of its dependencies (HTTP client, MCP library) prints one. Secrets read
//! from the environment stay on it for the process's life (the config names a bounded
//! set); tokens obtained at run time ([`Redactor::add_until`]) stay only while they are
//! good, so a server renewing people's tokens all day keeps a list the size of the
//! tokens alive now, not of every token it ever held. Registering what is already known
//! takes no exclusive lock.

use base64::Engine;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::RwLock;
use std::time::Instant;

/// What a masked secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Secrets shorter than this many characters are not registered: replacing every `ab`
/// in a response would wreck the text while protecting nothing a guess would not find.
const MIN_CHARS: usize = 4;

/// Base64 cores shorter than this are not registered (short cores match by chance).
const MIN_BASE64_CORE: usize = 8;

/// Replaces known secret values, in any spelling, with `[REDACTED]`.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    /// Each registered form as characters, longest first (so a secret that contains
    /// another is masked whole).
    secrets: Vec<Vec<char>>,
    /// The same forms, to tell a known one in constant time.
    known: HashSet<Vec<char>>,
    /// Bytes a spelling of some secret can start with.
    starts: StartSet,
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

#[derive(Debug, Clone)]
struct StartSet([bool; 256]);

impl Default for StartSet {
    fn default() -> Self {
        let mut s = [false; 256];
        // Escapes and percent-encodings can spell any character.
        s[usize::from(b'\\')] = true;
        s[usize::from(b'%')] = true;
        StartSet(s)
    }
}

impl Redactor {
    /// Registers a secret (and the base64 cores of it), here and for the logs for as
    /// long as the process runs: for secrets the catalog config names.
    pub fn add(&mut self, secret: &str) {
        for form in forms(secret) {
            if self.insert(&form) {
                register_for_logs(&form);
            }
        }
    }

    /// Registers a secret here, and for the logs until `until` or until this redactor is
    /// dropped, whichever is later: for tokens obtained at run time, masked in every log
    /// line while the call that uses them runs and forgotten once they are no longer good.
    pub fn add_until(&mut self, secret: &str, until: Instant) {
        for form in forms(secret) {
            if self.insert(&form) {
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
            self.insert(&form);
        }
    }

    /// Registers exactly this text (no derived forms), here and for the logs.
    pub fn add_form(&mut self, form: &str) {
        if self.insert(form) {
            register_for_logs(form);
        }
    }

    /// Adds one form; false when it is too short or known.
    fn insert(&mut self, form: &str) -> bool {
        let chars: Vec<char> = form.chars().collect();
        if chars.len() < MIN_CHARS || self.known.contains(&chars) {
            return false;
        }
        let mut buf = [0u8; 4];
        self.starts.0[usize::from(chars[0].encode_utf8(&mut buf).as_bytes()[0])] = true;
        if chars[0] == ' ' {
            self.starts.0[usize::from(b'+')] = true;
        }
        // Longest first, so a secret that contains another is masked whole.
        let at = self.secrets.partition_point(|s| s.len() >= chars.len());
        self.known.insert(chars.clone());
        self.secrets.insert(at, chars);
        true
    }

    /// Whether `form` is registered.
    fn knows(&self, form: &str) -> bool {
        self.known.contains(&form.chars().collect::<Vec<char>>())
    }

    /// Forgets the forms `gone` says to, rebuilding what depends on them.
    fn forget(&mut self, gone: impl Fn(&[char]) -> bool) {
        self.secrets.retain(|s| !gone(s));
        self.known = self.secrets.iter().cloned().collect();
        self.starts = StartSet::default();
        let mut buf = [0u8; 4];
        for chars in &self.secrets {
            self.starts.0[usize::from(chars[0].encode_utf8(&mut buf).as_bytes()[0])] = true;
            if chars[0] == ' ' {
                self.starts.0[usize::from(b'+')] = true;
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// How many forms are registered.
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// `text` with every registered secret masked, whatever its spelling.
    pub fn redact(&self, text: &str) -> String {
        if self.secrets.is_empty() {
            return text.to_string();
        }
        let t = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut i = 0;
        'scan: while i < t.len() {
            if self.starts.0[usize::from(t[i])] {
                for s in &self.secrets {
                    if let Some(end) = spelled(t, i, s, false) {
                        out.push_str(&text[copied..i]);
                        out.push_str(MASK);
                        copied = end;
                        i = end;
                        continue 'scan;
                    }
                }
            }
            i += utf8_len(t[i]);
        }
        out.push_str(&text[copied..]);
        out
    }

    /// Like [`redact`](Self::redact), for text that was cut off: a tail that is the
    /// beginning of a secret (at least four of its characters, in any spelling) is masked
    /// too.
    pub fn redact_cut(&self, text: &str) -> String {
        let mut out = self.redact(text);
        let Some(longest) = self.secrets.first().map(Vec::len) else {
            return out;
        };
        // A character is spelled in at most 12 bytes (`\uD83D\uDE00`); a few more for
        // doubled backslashes.
        let window = longest.saturating_mul(16);
        let t = out.as_bytes();
        let mut start = t.len().saturating_sub(window);
        while !out.is_char_boundary(start) {
            start += 1;
        }
        let mut cut = None;
        for i in (start..t.len()).filter(|&i| out.is_char_boundary(i)) {
            if self
                .secrets
                .iter()
                .any(|s| spelled(t, i, s, true).is_some())
            {
                cut = Some(i);
                break;
            }
        }
        if let Some(i) = cut {
            out.truncate(i);
            out.push_str(MASK);
        }
        out
    }
}

/// Where a spelling of `secret` that starts at `t[i]` ends. With `to_end`, a spelling of
/// at least [`MIN_CHARS`] leading characters of the secret that reaches the end of `t`
/// also counts.
///
/// A character may have several spellings at one place (a backslash of the secret against a
/// run of backslashes matches one to eight of them), so the search remembers the places
/// (text position, characters matched) it has seen fail: each is tried once, and a text
/// of backslashes costs a polynomial search rather than an exponential one.
fn spelled(t: &[u8], i: usize, secret: &[char], to_end: bool) -> Option<usize> {
    struct Search<'a> {
        t: &'a [u8],
        to_end: bool,
        failed: HashSet<(usize, usize)>,
    }
    impl Search<'_> {
        fn go(&mut self, i: usize, rest: &[char], done: usize) -> Option<usize> {
            let Some((&c, tail)) = rest.split_first() else {
                return Some(i);
            };
            if self.to_end && i == self.t.len() && done >= MIN_CHARS {
                return Some(i);
            }
            // The first character is tried once per call: nothing to remember there.
            if done > 0 && self.failed.contains(&(i, done)) {
                return None;
            }
            let mut ends = [0usize; 8];
            let n = spellings(self.t, i, c, &mut ends);
            for &e in &ends[..n] {
                if let Some(end) = self.go(e, tail, done + 1) {
                    return Some(end);
                }
            }
            if done > 0 {
                self.failed.insert((i, done));
            }
            None
        }
    }
    let mut search = Search {
        t,
        to_end,
        failed: HashSet::new(),
    };
    let end = search.go(i, secret, 0)?;
    (!to_end || end == t.len()).then_some(end)
}

/// The ends of every spelling of `c` starting at `t[i]` (at most 8), returned in `ends`.
fn spellings(t: &[u8], i: usize, c: char, ends: &mut [usize; 8]) -> usize {
    let mut n = 0;
    let mut push = |e: usize, n: &mut usize| {
        if *n < ends.len() {
            ends[*n] = e;
            *n += 1;
        }
    };
    let mut buf = [0u8; 4];
    let utf8 = c.encode_utf8(&mut buf).as_bytes();
    let rest = &t[i.min(t.len())..];
    if rest.is_empty() {
        return 0;
    }
    // As written.
    if rest.starts_with(utf8) {
        push(i + utf8.len(), &mut n);
    }
    // A space as `+` (forms, query strings).
    if c == ' ' && rest[0] == b'+' {
        push(i + 1, &mut n);
    }
    // Percent-encoded, each UTF-8 byte as `%XX` in either case.
    if rest[0] == b'%' && rest.len() >= 3 * utf8.len() {
        let ok = utf8
            .iter()
            .enumerate()
            .all(|(k, b)| rest[3 * k] == b'%' && hex_byte(&rest[3 * k + 1..3 * k + 3]) == Some(*b));
        if ok {
            push(i + 3 * utf8.len(), &mut n);
        }
    }
    // JSON (or JavaScript) escapes, behind one backslash or several (JSON inside JSON).
    let slashes = rest.iter().take_while(|b| **b == b'\\').count();
    if slashes > 0 {
        let after = &rest[slashes..];
        if c == '\\' {
            // A backslash of the secret, escaped any number of times.
            for k in 1..=slashes.min(8) {
                push(i + k, &mut n);
            }
        } else if c.is_ascii_punctuation() && after.first() == Some(&(c as u8)) {
            push(i + slashes + 1, &mut n);
        }
        let mut units = [0u16; 2];
        let mut at = i;
        let mut ok = true;
        for u in c.encode_utf16(&mut units).iter() {
            let r = &t[at..];
            let s = r.iter().take_while(|b| **b == b'\\').count();
            if s == 0 || r.get(s) != Some(&b'u') || r.len() < s + 5 {
                ok = false;
                break;
            }
            let hi = hex_byte(&r[s + 1..s + 3]);
            let lo = hex_byte(&r[s + 3..s + 5]);
            if hi != Some((u >> 8) as u8) || lo != Some((u & 0xff) as u8) {
                ok = false;
                break;
            }
            at += s + 5;
        }
        if ok {
            push(at, &mut n);
        }
    }
    n
}

fn hex_byte(two: &[u8]) -> Option<u8> {
    let d = |b: u8| (b as char).to_digit(16);
    Some((d(*two.first()?)? * 16 + d(*two.get(1)?)?) as u8)
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// The parts of the base64 encoding of `secret` that do not depend on what precedes or
/// follows it, at each of the three alignments it can have inside a longer encoded text,
/// in the standard and the URL-safe alphabet.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for k in 0..3 {
        let mut padded = vec![0u8; k];
        padded.extend_from_slice(secret);
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            let b64 = engine.encode(&padded);
            let first = (8 * k).div_ceil(6);
            let last = (8 * (k + secret.len())) / 6;
            if last > first && last - first >= MIN_BASE64_CORE {
                let core = b64[first..last].to_string();
                if !out.contains(&core) {
                    out.push(core);
                }
            }
        }
    }
    out
}

/// A secret and the base64 cores of it: every form it is registered in.
fn forms(secret: &str) -> Vec<String> {
    let mut v = vec![secret.to_string()];
    v.extend(base64_cores(secret.as_bytes()));
    v
}

/// What the logs mask: secrets for the process's life, and obtained tokens while a call
/// uses them or they are good.
#[derive(Default)]
struct LogSecrets {
    permanent: Redactor,
    expiring: Redactor,
    /// Each expiring form: until when it is good, and how many running calls hold it.
    held: HashMap<String, (Instant, usize)>,
    /// Whether some expiring form may be forgotten now or soon: the earliest expiry.
    next_expiry: Option<Instant>,
}

impl LogSecrets {
    fn register(&mut self, form: &str) {
        self.permanent.insert(form);
    }

    /// One more call holds `form`, good until `until`.
    fn hold(&mut self, form: &str, until: Instant) {
        let entry = self.held.entry(form.to_string()).or_insert((until, 0));
        entry.0 = entry.0.max(until);
        entry.1 += 1;
        self.expiring.insert(form);
        self.next_expiry = Some(self.next_expiry.map_or(until, |t| t.min(until)));
        let now = Instant::now();
        if self.next_expiry.is_some_and(|t| t <= now) {
            self.prune(now);
        }
    }

    /// A call that held `form` ended.
    fn release(&mut self, form: &str) {
        if let Some(e) = self.held.get_mut(form) {
            e.1 = e.1.saturating_sub(1);
        }
    }

    /// Forgets every expiring form no call holds and whose time has passed.
    fn prune(&mut self, now: Instant) {
        let before = self.held.len();
        self.held
            .retain(|_, (until, holders)| *holders > 0 || *until > now);
        if self.held.len() != before {
            let held = &self.held;
            self.expiring
                .forget(|chars| !held.contains_key(&chars.iter().collect::<String>()));
        }
        self.next_expiry = self.held.values().map(|(t, _)| *t).min();
    }

    fn knows(&self, form: &str) -> bool {
        self.permanent.knows(form)
    }
}

/// Every secret any [`Redactor`] of this process has learnt, for the logs.
static LOG_SECRETS: std::sync::LazyLock<RwLock<LogSecrets>> =
    std::sync::LazyLock::new(|| RwLock::new(LogSecrets::default()));

fn register_for_logs(form: &str) {
    // A secret sent with every call is known after the first: a shared lock tells.
    if LOG_SECRETS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .knows(form)
    {
        return;
    }
    LOG_SECRETS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .register(form);
}

/// Registers a secret that is not read through a [`Redactor`] (user info of a base URL)
/// so logs never show it.
pub fn register_secret_for_logs(secret: &str) {
    let mut r = Redactor::default();
    r.add(secret);
}

/// How many forms the logs mask now: those of the process's secrets, and those of the
/// obtained tokens not yet expired (tests and diagnostics: it must not grow with time).
pub fn log_secret_count() -> usize {
    let mut s = LOG_SECRETS.write().unwrap_or_else(|e| e.into_inner());
    s.prune(Instant::now());
    s.permanent.len() + s.expiring.len()
}

/// `text` with every secret this process knows masked.
pub fn redact_for_logs(text: &str) -> String {
    let s = LOG_SECRETS.read().unwrap_or_else(|e| e.into_inner());
    if s.permanent.is_empty() && s.expiring.is_empty() {
        return text.to_string();
    }
    let once = s.permanent.redact(text);
    s.expiring.redact(&once)
}

/// A `tracing` writer to stderr that masks every known secret in each log line.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogWriter;

/// One log event's text; masked and written out when the event is complete.
pub struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&self.0);
        let masked = redact_for_logs(&text);
        self.0.clear();
        std::io::stderr().lock().write_all(masked.as_bytes())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> Self::Writer {
        LogLine(Vec::with_capacity(256))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(secrets: &[&str]) -> Redactor {
        let mut r = Redactor::default();
        for s in secrets {
            r.add(s);
        }
        r
    }

    #[test]
    fn every_spelling_is_masked() {
        let r = r(&["sekrit/123+456="]);
        for spelled in [
            "sekrit/123+456=",
            r"sekrit\/123+456=",
            r"sekrit\\\/123+456=",
            r"\u0073ekrit\u002f123\u002B456\u003d",
            r"\\u0073ekrit/123+456=",
            "sekrit%2F123%2B456%3D",
            "sekrit%2f123%2b456%3d",
            "%73ekrit/123+456=",
            r"s%65krit\/123+456=",
        ] {
            let text = format!("token: {spelled}!");
            assert_eq!(r.redact(&text), "token: [REDACTED]!", "{spelled}");
        }
        assert_eq!(r.redact("sekrit/12 is not it"), "sekrit/12 is not it");
    }

    #[test]
    fn spaces_and_non_ascii() {
        let r = r(&["pass wörd 😀"]);
        assert_eq!(
            r.redact("a pass+w%C3%B6rd+%F0%9F%98%80 b"),
            "a [REDACTED] b"
        );
        assert_eq!(
            r.redact(r#"{"p":"pass w\u00f6rd \ud83d\ude00"}"#),
            r#"{"p":"[REDACTED]"}"#
        );
    }

    #[test]
    fn base64_at_any_alignment() {
        let r = r(&["opensesame-42"]);
        for prefix in ["", "a", "ab", "abc:"] {
            let encoded = base64::engine::general_purpose::STANDARD
                .encode(format!("{prefix}opensesame-42 trailing"));
            let out = r.redact(&format!("Basic {encoded}"));
            assert!(out.contains(MASK), "{prefix}: {out}");
            // And when a JSON encoder escaped its slashes.
            let escaped = encoded.replace('/', "\\/");
            assert!(r.redact(&escaped).contains(MASK), "{escaped}");
        }
    }

    #[test]
    fn cut_tails_are_masked_in_any_spelling() {
        let r = r(&["sekrit/123+456="]);
        assert_eq!(r.redact_cut("x sekrit\\/12"), "x [REDACTED]");
        assert_eq!(r.redact_cut("x %73ekr"), "x [REDACTED]");
        assert_eq!(r.redact_cut("x sek"), "x sek");
    }

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

    #[test]
    fn a_secret_inside_another_is_masked_whole() {
        let r = r(&["abcd1234", "xxabcd1234yy"]);
        assert_eq!(r.redact("-xxabcd1234yy-"), "-[REDACTED]-");
        assert_eq!(r.redact("-abcd1234-"), "-[REDACTED]-");
    }

    #[test]
    fn log_lines_are_masked() {
        register_secret_for_logs("l0g-secret/value");
        let mut line = LogLine(Vec::new());
        line.write_all(br"DEBUG body: l0g-secret\/value").unwrap();
        assert_eq!(
            redact_for_logs(&String::from_utf8_lossy(&line.0)),
            "DEBUG body: [REDACTED]"
        );
        line.0.clear();
    }
}
