//! Problems found while loading a catalog. Every problem names its file, and a JSON pointer
//! when it concerns one place in the document, so a platform team can fix the spec.

use std::fmt;
use std::path::{Path, PathBuf};

/// How bad a problem is for the spec it concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The spec could not be used at all and was skipped.
    Error,
    /// The spec loaded, but one part was dropped or degraded.
    Warning,
}

/// One problem with one spec.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub severity: Severity,
    pub file: PathBuf,
    /// RFC 6901 JSON pointer into the document (`#/paths/~1pets/get`), when it applies.
    pub pointer: Option<String>,
    pub message: String,
}

impl Problem {
    pub fn error(file: &Path, pointer: Option<String>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Error,
            file: file.to_path_buf(),
            pointer,
            message: message.into(),
        }
    }

    pub fn warning(file: &Path, pointer: Option<String>, message: impl Into<String>) -> Problem {
        Problem {
            severity: Severity::Warning,
            file: file.to_path_buf(),
            pointer,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{kind}: {}", self.file.display())?;
        if let Some(p) = &self.pointer {
            write!(f, ": {p}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub fn push_pointer(base: &str, token: &str) -> String {
    format!("{base}/{}", token.replace('~', "~0").replace('/', "~1"))
}
