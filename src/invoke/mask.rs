//! Matching secrets in every spelling they come back in.
//!
//! A secret sent upstream returns in many shapes: as written; inside a JSON string, where
//! an encoder may escape `/` as `\/` (PHP does by default) or any character as `\uXXXX`
//! (JavaScript's for non-ASCII, some for everything), possibly escaped twice when JSON
//! sits inside JSON; percent-encoded (`%2F`, `%2f`, or `+` for a space) when a server
//! echoes a URL or a form; in base64, as in a `Basic` authorization header echoed back.
//!
//! Rather than listing spellings (there are exponentially many: each character can be
//! spelled independently), a [`Mask`] matches a secret character by character, each
//! character in any of its spellings, so `s\u0065kr%69t\/1` is found as `sekrit/1`. Base64
//! cannot be matched that way (one character of the secret spreads over two of the
//! encoding), so the stable core of the secret's base64 at each of the three alignments is
//! a form of its own (in both alphabets, [`forms`]), and is then matched in every spelling
//! too.

use base64::Engine;
use std::collections::HashSet;

/// What a masked secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Secrets shorter than this many characters are not registered: replacing every `ab`
/// in a response would wreck the text while protecting nothing a guess would not find.
pub const MIN_CHARS: usize = 4;

/// Base64 cores shorter than this are not registered (short cores match by chance).
const MIN_BASE64_CORE: usize = 8;

/// Known secret forms, and what masks them in a text.
#[derive(Debug, Default, Clone)]
pub struct Mask {
    /// Each form as characters, longest first (so a secret that contains another is
    /// masked whole).
    secrets: Vec<Vec<char>>,
    /// The same forms, to tell a known one in constant time.
    known: HashSet<Vec<char>>,
    /// Bytes a spelling of some secret can start with.
    starts: StartSet,
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

impl Mask {
    /// Adds one form; false when it is too short or known.
    pub fn insert(&mut self, form: &str) -> bool {
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
    pub fn knows(&self, form: &str) -> bool {
        self.known.contains(&form.chars().collect::<Vec<char>>())
    }

    /// Forgets the forms `gone` says to, rebuilding what depends on them.
    pub fn forget(&mut self, gone: impl Fn(&[char]) -> bool) {
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
pub fn forms(secret: &str) -> Vec<String> {
    let mut v = vec![secret.to_string()];
    v.extend(base64_cores(secret.as_bytes()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(secrets: &[&str]) -> Mask {
        let mut m = Mask::default();
        for s in secrets {
            for f in forms(s) {
                m.insert(&f);
            }
        }
        m
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
    fn a_secret_inside_another_is_masked_whole() {
        let r = r(&["abcd1234", "xxabcd1234yy"]);
        assert_eq!(r.redact("-xxabcd1234yy-"), "-[REDACTED]-");
        assert_eq!(r.redact("-abcd1234-"), "-[REDACTED]-");
    }
}
