//! `shortlist doc-texts`: print the text the index embeds for every endpoint of a catalog,
//! as JSON Lines, so that a retrieval model is trained on exactly what the product embeds
//! (`training/` reads it).
//!
//! ```text
//! shortlist doc-texts SPEC_OR_FOLDER... [--masks] > docs.jsonl
//! {"key": "<api> METHOD /path", "text": "...", "masked": {"summary": "...", ...}}
//! ```

use super::CatalogArgs;
use clap::Args;
use shortlist::index::doc_text::{build_in, Context, DocVariant};
use shortlist::index::training_text::{masked_text, Mask};
use std::io::Write;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DocTextsArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// Which fields make up each endpoint's doc text.
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    /// Also give each endpoint's text without its summary and without its description's
    /// first sentence (for queries taken from that text).
    #[arg(long)]
    pub masks: bool,
}

pub fn run(args: DocTextsArgs) -> anyhow::Result<ExitCode> {
    let catalog = args.catalog.load()?;
    let ctx = Context::of(&catalog.endpoints);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for ep in &catalog.endpoints {
        let mut row = serde_json::json!({
            "key": ep.qualified_key(),
            "text": build_in(ep, args.variant, &ctx),
        });
        if args.masks {
            let masked: serde_json::Map<String, serde_json::Value> = Mask::ALL
                .iter()
                .map(|&m| {
                    (
                        m.name().to_string(),
                        masked_text(ep, args.variant, &ctx, m).into(),
                    )
                })
                .collect();
            row["masked"] = masked.into();
        }
        writeln!(out, "{row}")?;
    }
    out.flush()?;
    eprintln!(
        "{} endpoint(s) of {} API(s)",
        catalog.endpoints.len(),
        catalog.apis.len()
    );
    Ok(ExitCode::SUCCESS)
}
