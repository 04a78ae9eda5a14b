//! Prompt templates: one plain-text file per task in `enrich-prompts/`, which users edit.
//!
//! The built-in copies are compiled in, so the binary works from anywhere; `--prompts DIR`
//! (or `prompts` in the config's `[enrich]` table) replaces any of them by a file of the same
//! name. A template's whole text is part of the cache key, so editing one regenerates
//! exactly what it writes.
//!
//! Format: optional `#` comment lines, then a `[system]` section and a `[user]` section
//! (a file without sections is all user message). `{{name}}` placeholders are filled from
//! the endpoint's [`EndpointContext`]; an unknown placeholder is an error naming the file,
//! so a typo is caught before any request is sent.

use super::context::EndpointContext;
use super::Task;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The system message of a template that has no `[system]` section.
const DEFAULT_SYSTEM: &str =
    "You write short, factual documentation for REST APIs. Answer with JSON only.";

/// The placeholders a template may use.
pub const PLACEHOLDERS: &[&str] = &[
    "api_title",
    "method",
    "path",
    "operation_id",
    "summary",
    "description",
    "tags",
    "parameters",
    "request_body",
    "response_fields",
    "targets",
];

const BATCH_BUILTIN: &str = include_str!("../../enrich-prompts/endpoint-batch.txt");

fn builtin(task: Task) -> &'static str {
    match task {
        Task::Description => include_str!("../../enrich-prompts/endpoint-description.txt"),
        Task::ParamDescriptions => include_str!("../../enrich-prompts/parameter-descriptions.txt"),
        Task::ParamExamples => include_str!("../../enrich-prompts/parameter-examples.txt"),
        Task::Summary => include_str!("../../enrich-prompts/endpoint-summary.txt"),
        Task::Questions => include_str!("../../enrich-prompts/endpoint-questions.txt"),
    }
}

/// A template could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{path}: cannot read prompt template: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: unknown placeholder {{{{{name}}}}} (known: {known})")]
    Placeholder {
        origin: String,
        name: String,
        known: String,
    },
    #[error("{origin}: the [user] section is empty")]
    Empty { origin: String },
}

/// One parsed template.
#[derive(Debug, Clone)]
pub struct Template {
    pub task: Task,
    /// Where it came from: a file path, or `built-in`.
    pub origin: String,
    system: String,
    user: String,
    /// SHA-256 of the file's whole text (hex): part of the cache key and the marker.
    pub sha256: String,
}

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub system: String,
    pub user: String,
}

impl Template {
    /// Parses a template's text; `origin` names it in errors.
    pub fn parse(task: Task, origin: &str, text: &str) -> Result<Template, PromptError> {
        let (system, user, sha256) = sections(origin, text, PLACEHOLDERS)?;
        Ok(Template {
            task,
            origin: origin.to_string(),
            system,
            user,
            sha256,
        })
    }

    /// `endpoint-description@1a2b3c4d`: the template's name and version, for markers.
    pub fn label(&self) -> String {
        format!("{}@{}", self.task.template_name(), &self.sha256[..8])
    }

    /// Fills the placeholders. `targets` are the parameter names a parameter task asks about.
    pub fn render(&self, ctx: &EndpointContext, targets: &[String]) -> Rendered {
        Rendered {
            system: fill(&self.system, ctx, targets),
            user: fill(&self.user, ctx, targets),
        }
    }
}

/// Splits a template's text into its system and user messages (comments dropped), checks
/// its placeholders against `allowed`, and hashes the whole text.
fn sections(
    origin: &str,
    text: &str,
    allowed: &[&str],
) -> Result<(String, String, String), PromptError> {
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    #[derive(PartialEq)]
    enum Section {
        Preamble,
        System,
        User,
    }
    let mut section = Section::Preamble;
    let (mut preamble, mut system, mut user) = (String::new(), String::new(), String::new());
    let mut has_sections = false;
    for line in text.lines() {
        match line.trim() {
            "[system]" => section = Section::System,
            "[user]" => section = Section::User,
            _ => {
                let buf = match section {
                    // Comments are allowed only before the first section: inside one,
                    // a '#' line may be part of the prompt (a markdown heading).
                    Section::Preamble if line.starts_with('#') => continue,
                    Section::Preamble => &mut preamble,
                    Section::System => &mut system,
                    Section::User => &mut user,
                };
                buf.push_str(line);
                buf.push('\n');
                continue;
            }
        }
        has_sections = true;
    }
    let (system, user) = if has_sections {
        // Text before the first section joins the system message rather than vanish.
        let system = format!("{}\n{}", preamble.trim(), system.trim());
        (system.trim().to_string(), user.trim().to_string())
    } else {
        (DEFAULT_SYSTEM.to_string(), preamble.trim().to_string())
    };
    if user.is_empty() {
        return Err(PromptError::Empty {
            origin: origin.to_string(),
        });
    }
    for name in placeholders(&system).chain(placeholders(&user)) {
        if !allowed.contains(&name) {
            return Err(PromptError::Placeholder {
                origin: origin.to_string(),
                name: name.to_string(),
                known: allowed.join(", "),
            });
        }
    }
    let system = if system.is_empty() {
        DEFAULT_SYSTEM.to_string()
    } else {
        system
    };
    Ok((system, user, sha256))
}

/// The placeholders of the batch template.
pub const BATCH_PLACEHOLDERS: &[&str] = &["api_title", "endpoints", "fields", "shape"];

/// The file name (without extension) of the batch template, also its name in markers.
pub const BATCH_NAME: &str = "endpoint-batch";

/// The template of batched requests: several endpoints of one API, all their tasks, one
/// answer (see `batch`).
#[derive(Debug, Clone)]
pub struct BatchTemplate {
    pub origin: String,
    system: String,
    user: String,
    pub sha256: String,
}

impl BatchTemplate {
    pub fn parse(origin: &str, text: &str) -> Result<BatchTemplate, PromptError> {
        let (system, user, sha256) = sections(origin, text, BATCH_PLACEHOLDERS)?;
        Ok(BatchTemplate {
            origin: origin.to_string(),
            system,
            user,
            sha256,
        })
    }

    /// `endpoint-batch@1a2b3c4d`.
    pub fn label(&self) -> String {
        format!("{BATCH_NAME}@{}", &self.sha256[..8])
    }

    /// Fills the placeholders with the given texts.
    pub fn render(&self, values: &[(&str, &str)]) -> Rendered {
        let fill = |t: &str| {
            let mut out = t.to_string();
            for (k, v) in values {
                for form in [format!("{{{{{k}}}}}"), format!("{{{{ {k} }}}}")] {
                    out = out.replace(&form, v);
                }
            }
            out
        };
        Rendered {
            system: fill(&self.system),
            user: fill(&self.user),
        }
    }
}

/// The names of `{{name}}` placeholders in a text.
fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.split("{{")
        .skip(1)
        .filter_map(|s| s.split_once("}}").map(|(name, _)| name.trim()))
}

fn fill(text: &str, ctx: &EndpointContext, targets: &[String]) -> String {
    let or_none = |s: Option<&String>| s.cloned().unwrap_or_else(|| "(none)".to_string());
    let mut out = String::with_capacity(text.len() + 512);
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let value = match after[..end].trim() {
            "api_title" => ctx.api_title.clone(),
            "method" => ctx.method.clone(),
            "path" => ctx.path.clone(),
            "operation_id" => or_none(ctx.operation_id.as_ref()),
            "summary" => or_none(ctx.summary.as_ref()),
            "description" => or_none(ctx.description.as_ref()),
            "tags" if ctx.tags.is_empty() => "(none)".to_string(),
            "tags" => ctx.tags.join(", "),
            "parameters" => ctx.parameters_text(),
            "request_body" => or_none(ctx.request_body.as_ref()),
            "response_fields" if ctx.response_fields.is_empty() => "(none)".to_string(),
            "response_fields" => ctx.response_fields.join(", "),
            "targets" => ctx.targets_text(targets),
            other => format!("{{{{{other}}}}}"),
        };
        out.push_str(&value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The templates of every task.
#[derive(Debug, Clone)]
pub struct Prompts {
    templates: Vec<Template>,
    /// The template of batched requests.
    pub batch: BatchTemplate,
}

impl Prompts {
    /// The built-in templates (the files of `enrich-prompts/` at build time).
    pub fn builtin() -> Prompts {
        let templates = Task::ALL
            .iter()
            .map(|&t| {
                Template::parse(t, "built-in", builtin(t))
                    .unwrap_or_else(|e| unreachable!("built-in template {t:?} is invalid: {e}"))
            })
            .collect();
        let batch = BatchTemplate::parse("built-in", BATCH_BUILTIN)
            .unwrap_or_else(|e| unreachable!("built-in batch template is invalid: {e}"));
        Prompts { templates, batch }
    }

    /// Templates from `dir` where it holds `<template-name>.txt`, built-in ones otherwise.
    pub fn load(dir: Option<&Path>) -> Result<Prompts, PromptError> {
        let mut templates = Vec::new();
        for task in Task::ALL {
            let file = dir.map(|d| d.join(format!("{}.txt", task.template_name())));
            let template = match file {
                Some(f) if f.is_file() => {
                    let text = std::fs::read_to_string(&f).map_err(|source| PromptError::Read {
                        path: f.clone(),
                        source,
                    })?;
                    Template::parse(task, &f.display().to_string(), &text)?
                }
                _ => Template::parse(task, "built-in", builtin(task))?,
            };
            templates.push(template);
        }
        let file = dir.map(|d| d.join(format!("{BATCH_NAME}.txt")));
        let batch = match file {
            Some(f) if f.is_file() => {
                let text = std::fs::read_to_string(&f).map_err(|source| PromptError::Read {
                    path: f.clone(),
                    source,
                })?;
                BatchTemplate::parse(&f.display().to_string(), &text)?
            }
            _ => BatchTemplate::parse("built-in", BATCH_BUILTIN)?,
        };
        Ok(Prompts { templates, batch })
    }

    /// The template of a task.
    pub fn get(&self, task: Task) -> &Template {
        // Every task has one: both constructors build them from Task::ALL.
        self.templates
            .iter()
            .find(|t| t.task == task)
            .unwrap_or(&self.templates[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> EndpointContext {
        EndpointContext {
            api_title: "TMDB".into(),
            method: "GET".into(),
            path: "/movie/{movie_id}".into(),
            operation_id: Some("getMovie".into()),
            summary: None,
            description: None,
            tags: vec![],
            parameters: vec![],
            request_body: None,
            response_fields: vec!["id".into()],
            rejected: vec![],
        }
    }

    #[test]
    fn builtin_templates_parse_and_render() {
        let p = Prompts::builtin();
        for t in Task::ALL {
            let r = p.get(t).render(&ctx(), &[]);
            assert!(
                r.user.contains("GET /movie/{movie_id}"),
                "{t:?}: {}",
                r.user
            );
            assert!(!r.user.contains("{{"), "{t:?}: {}", r.user);
            assert!(!r.system.is_empty());
        }
    }

    #[test]
    fn sections_comments_and_unknown_placeholders() {
        let t = Template::parse(
            Task::Summary,
            "t.txt",
            "# comment\n[system]\nBe brief.\n[user]\nSay {{ method }} {{path}}\n",
        )
        .unwrap();
        let r = t.render(&ctx(), &[]);
        assert_eq!(r.system, "Be brief.");
        assert_eq!(r.user, "Say GET /movie/{movie_id}");
        let e = Template::parse(Task::Summary, "t.txt", "Say {{methd}}").unwrap_err();
        assert!(
            e.to_string()
                .contains("t.txt: unknown placeholder {{methd}}"),
            "{e}"
        );
        let plain = Template::parse(Task::Summary, "t.txt", "Just {{path}}").unwrap();
        assert_eq!(plain.render(&ctx(), &[]).system, DEFAULT_SYSTEM);
    }
}
