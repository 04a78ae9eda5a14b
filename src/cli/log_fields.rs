//! The fields of a text log line, with every control character escaped.
//!
//! A log line carries text that callers chose: a token's `kid` read before any signature
//! is checked, a path, an upstream's error body. Written raw, a line break in it starts a
//! line that reads like the server's own, a carriage return or a terminal escape hides
//! what came before, and a bidi control reorders what a person reads. The text format
//! therefore writes each field's value, and the message, with such characters escaped as
//! `\n`, `\r`, `\t` or `\u{..}`, so one event is always one visible line. (The JSON format
//! escapes them already: a JSON string cannot hold them raw.)

use std::fmt::{self, Write};
use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::FormatFields;

/// [`FormatFields`] for the text format: `message name=value ...`, values escaped.
#[derive(Debug, Default, Clone, Copy)]
pub struct EscapedFields;

impl<'w> FormatFields<'w> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut v = Visitor {
            ansi: writer.has_ansi_escapes(),
            writer,
            empty: true,
            result: Ok(()),
        };
        fields.record(&mut v);
        v.result
    }
}

/// Whether `c` must not reach a text log raw: C0 and C1 controls and DEL, the Unicode line
/// and paragraph separators, and the bidi controls that reorder what is displayed.
fn must_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}'
                | '\u{2029}'
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// A [`fmt::Write`] that escapes what [`must_escape`] names on its way to `inner`.
struct Escaping<'a, W: Write + ?Sized>(&'a mut W);

impl<W: Write + ?Sized> Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(i) = rest.find(must_escape) {
            self.0.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or_default();
            match c {
                '\n' => self.0.write_str("\\n")?,
                '\r' => self.0.write_str("\\r")?,
                '\t' => self.0.write_str("\\t")?,
                c => write!(self.0, "{}", c.escape_unicode())?,
            }
            rest = &rest[i + c.len_utf8()..];
        }
        self.0.write_str(rest)
    }
}

struct Visitor<'w> {
    writer: Writer<'w>,
    ansi: bool,
    empty: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    /// Writes one field: the message bare, any other as `name=value`; the value escaped.
    fn write(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        let name = field.name();
        // `log` records' metadata, already written as the line's target.
        if self.result.is_err() || name.starts_with("log.") {
            return;
        }
        let name = name.strip_prefix("r#").unwrap_or(name);
        self.result = (|| {
            if !std::mem::take(&mut self.empty) {
                self.writer.write_char(' ')?;
            }
            if name != "message" {
                if self.ansi {
                    write!(self.writer, "\x1b[3m{name}\x1b[0m\x1b[2m=\x1b[0m")?;
                } else {
                    write!(self.writer, "{name}=")?;
                }
            }
            Escaping(&mut self.writer).write_fmt(value)
        })();
    }
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        // The message as written; other text quoted, as the default text format does.
        if field.name() == "message" {
            self.write(field, format_args!("{value}"));
        } else {
            self.write(field, format_args!("{value:?}"));
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let mut text = value.to_string();
        let mut source = value.source();
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        self.write(field, format_args!("{text}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.write(field, format_args!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escape(text: &str) -> String {
        let mut out = String::new();
        Escaping(&mut out).write_str(text).unwrap();
        out
    }

    #[test]
    fn controls_separators_and_bidi_are_escaped() {
        assert_eq!(
            escape("k1\nFORGED\r\tx\u{1b}[2K\u{7f}\u{85}\u{2028}\u{2029}\u{202e}\u{2066}\u{200f}"),
            r"k1\nFORGED\r\tx\u{1b}[2K\u{7f}\u{85}\u{2028}\u{2029}\u{202e}\u{2066}\u{200f}"
        );
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        for s in [
            "",
            "plain",
            "naïve café 東京 🙂",
            r"a\nb (already escaped)",
            "\"quoted\"",
        ] {
            assert_eq!(escape(s), s);
        }
    }

    /// Every field and the message of an event, through the text format.
    #[test]
    fn an_event_is_one_line() {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::SubscriberExt;

        #[derive(Clone, Default)]
        struct Buf(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buf {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buf = Buf::default();
        let out = buf.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .fmt_fields(EscapedFields)
            .with_writer(move || out.clone());
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let evil = "x\nFORGED a";
            let span = tracing::info_span!("req", path = %"/p\nFORGED b");
            let _g = span.enter();
            let err = std::io::Error::other("bad\nFORGED c");
            tracing::warn!(kid = %evil, quoted = evil, n = 3, error = &err as &(dyn std::error::Error + 'static), "refused {evil}\u{2028}FORGED d");
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        for want in [
            r#"req{path=/p\nFORGED b}"#,
            r"refused x\nFORGED a\u{2028}FORGED d",
            r"kid=x\nFORGED a",
            r#"quoted="x\nFORGED a""#,
            "n=3",
            r"error=bad\nFORGED c",
        ] {
            assert!(text.contains(want), "{want} in {text:?}");
        }
    }
}
