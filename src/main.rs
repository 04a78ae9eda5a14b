//! The `shortlist` command line: a thin dispatcher, one function per subcommand in
//! `cli/`. Exit codes are deliberate: 0 success, 1 nothing found, 2 error.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Shortlist REST API endpoints for AI assistants, over MCP.
#[derive(Parser)]
#[command(name = "shortlist", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How logs are written to stderr: `text`, or `json` for one JSON object per line.
    #[arg(long, global = true, value_enum, default_value_t = cli::logging::LogFormat::Text, env = "SHORTLIST_LOG_FORMAT")]
    log_format: cli::logging::LogFormat,
}

#[derive(Subcommand)]
enum Command {
    /// Load a catalog and report its problems, without indexing.
    Check(cli::CatalogArgs),
    /// Build or update the endpoint index of a catalog.
    Index(cli::index::IndexArgs),
    /// Rank a catalog's endpoints for a query.
    Search(cli::search::SearchArgs),
    /// Serve the catalog to MCP clients over stdio (default) or HTTP.
    Serve(cli::serve::ServeArgs),
    /// Call one endpoint of the catalog by its tool name and print the answer.
    Call(cli::call::CallArgs),
    /// Measure retrieval on a benchmark (queries with gold endpoints).
    Eval(cli::eval::EvalArgs),
    /// Print the text the index embeds for each endpoint (JSON Lines), for training a
    /// retrieval model.
    DocTexts(cli::doc_texts::DocTextsArgs),
    /// Fill in missing descriptions and examples (LLM or heuristic) into enriched copies.
    Enrich(cli::enrich::EnrichArgs),
    /// Open the catalog console in a browser: health, review of generated text, try a request.
    Console(cli::console::ConsoleArgs),
    /// Add this server to an MCP client's configuration (claude-desktop, claude-code,
    /// cursor, mcp-json).
    Install(cli::install::InstallArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands whose start is mostly the model's session build (cli/huge_pages.rs).
    // Before logging starts: the restart would not keep its threads.
    if matches!(cli.command, Command::Search(_) | Command::Serve(_)) {
        cli::huge_pages::restart_with_huge_pages();
    }
    // Held to the end: dropping it flushes the spans not yet exported.
    let _logging = cli::logging::init(cli.log_format);
    let result = match cli.command {
        Command::Check(a) => cli::check(a),
        Command::Index(a) => cli::index::run(a),
        Command::Search(a) => cli::search::run(a),
        Command::Serve(a) => cli::serve::run(a),
        Command::Call(a) => cli::call::run(a),
        Command::Eval(a) => cli::eval::run(a),
        Command::DocTexts(a) => cli::doc_texts::run(a),
        Command::Enrich(a) => cli::enrich::run(a),
        Command::Console(a) => cli::console::run(a),
        Command::Install(a) => cli::install::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            for line in format!("{e:#}").lines() {
                eprintln!("shortlist: {line}");
            }
            ExitCode::from(2)
        }
    }
}
