//! `shortlist index`: build or update the endpoint index.

use super::model::ModelArgs;
use super::CatalogArgs;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use shortlist::index::catalog_index;
use shortlist::index::doc_text::DocVariant;
use std::io::IsTerminal;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct IndexArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    /// Which fields make up each endpoint's doc text.
    #[arg(long, value_enum, default_value_t = DocVariant::default())]
    pub variant: DocVariant,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub fn run(args: IndexArgs) -> anyhow::Result<ExitCode> {
    let catalog = args.catalog.load()?;
    let data_dir = args.catalog.data_dir(Some(&catalog.config))?;
    let embedder = args.model.load(Some(&catalog.config))?;
    // A bar on a terminal; nothing otherwise, so logs and CI output stay readable.
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(
                "embedding {bar:40} {pos}/{len} endpoints ({per_sec}, eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let started = std::time::Instant::now();
    let (index, stats) = catalog_index::build(
        &catalog,
        &data_dir,
        &embedder,
        args.variant,
        |done, total| {
            if let Some(b) = &bar {
                b.set_length(total as u64);
                b.set_position(done as u64);
            }
        },
    )?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    eprintln!(
        "indexed {} endpoint(s) of {} API(s) in {}: {} embedded, {} reused, {} removed ({:.1} s)",
        index.len(),
        catalog.apis.len(),
        data_dir.display(),
        stats.embedded,
        stats.reused,
        stats.removed,
        started.elapsed().as_secs_f64()
    );
    Ok(if catalog.errors().next().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
