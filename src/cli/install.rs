//! `shortlist install CLIENT`: adds this server to an MCP client's configuration, the way
//! `fastmcp install claude-desktop|claude-code|cursor|mcp-json` does for Python servers.
//!
//! The entry starts this very binary by its absolute path on the catalog by its absolute
//! path, so it works whatever folder the client starts it from. Its `env` block names the
//! catalog's credential variables (never their values). Model paths a client would not find
//! by itself (a `--model-dir`, an environment variable, a checkout's `.vendor/`) are pinned
//! as flags; the per-user data folder needs nothing.

use super::client_config::{self, Client};
use super::model::ModelArgs;
use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use shortlist::catalog::CatalogConfig;
use shortlist::index::Origin;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The client to configure: claude-desktop, claude-code, cursor, or mcp-json (a generic
    /// mcp.json in the current folder).
    #[arg(value_enum)]
    pub client: Client,
    #[command(flatten)]
    pub catalog: CatalogArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    /// The server's name in the client's configuration.
    #[arg(long, default_value = "shortlist")]
    pub name: String,
    /// Print the configuration entry instead of writing it.
    #[arg(long)]
    pub print: bool,
    /// Write this configuration file instead of the client's own.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Claude Code: `project` writes .mcp.json in the current folder (default), `user`
    /// writes ~/.claude.json. Cursor: `project` writes .cursor/mcp.json in the current
    /// folder, `user` writes ~/.cursor/mcp.json (default).
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// Move every server the client starts behind shortlist: its file then starts only
    /// `shortlist serve` on them. Says what it would do; `--apply` does it (the old file
    /// is kept as `<file>.shortlist-backup`).
    #[arg(long, conflicts_with_all = ["print", "undo"])]
    pub take_over: bool,
    /// With `--take-over`: write it.
    #[arg(long, requires = "take_over")]
    pub apply: bool,
    /// Undo a take-over: put the backup back.
    #[arg(long, conflicts_with = "print")]
    pub undo: bool,
    /// Extra `shortlist serve` arguments, after `--` (e.g. `-- --expose meta`).
    #[arg(last = true, value_name = "SERVE ARGS")]
    pub serve_args: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    Project,
    User,
}

pub fn run(args: InstallArgs) -> anyhow::Result<ExitCode> {
    if args.undo || args.take_over {
        return take_over(&args);
    }
    let cfg = args.catalog.config()?;
    let command = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find this program's own path")?;
    let serve = serve_args(&args, &args.catalog, &cfg)?;
    let env_names = credential_variables(&cfg);
    let entry = client_config::entry(args.client, &command, &serve, &env_names);
    if args.print {
        println!(
            "{}",
            serde_json::to_string_pretty(&client_config::document(&args.name, &entry))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    let file = match &args.file {
        Some(f) => f.clone(),
        None => config_file(args.client, args.scope)?,
    };
    let added = client_config::add_to_file(&file, &args.name, &entry)?;
    eprintln!(
        "{} '{}' in {}'s configuration {} ({} other server(s) kept)",
        if added.replaced { "updated" } else { "added" },
        args.name,
        args.client.label(),
        added.file.display(),
        added.others
    );
    if !env_names.is_empty() {
        if args.client.expands_env() {
            eprintln!(
                "credentials: {} pass(es) on {} from its environment: set them where it starts",
                args.client.label(),
                env_names.join(", ")
            );
        } else {
            eprintln!(
                "credentials: {} passes no environment of its own: fill in {} in {}",
                args.client.label(),
                env_names.join(", "),
                added.file.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--take-over` (a preview, or with `--apply` the change) and `--undo`.
fn take_over(args: &InstallArgs) -> anyhow::Result<ExitCode> {
    use super::take_over::{apply, plan, undo, Places};
    let file = match &args.file {
        Some(f) => f.clone(),
        None => config_file(args.client, args.scope)?,
    };
    if args.undo {
        undo(&file)?;
        eprintln!("restored {} from its backup", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    let plan = plan(&file, &args.name)?;
    if plan.moved.is_empty() {
        anyhow::bail!(
            "{} starts no server but '{}': nothing to take over",
            file.display(),
            args.name
        );
    }
    let places = Places::of(&file);
    // What a careful person would want to know of the servers, said before anything moves.
    let preview = tempfile::Builder::new().suffix(".json").tempfile()?;
    std::fs::write(
        preview.path(),
        serde_json::json!({ "mcpServers": plan.moved }).to_string(),
    )?;
    let imported =
        shortlist::catalog::client_file::import(preview.path(), &|k| std::env::var(k).ok())?;
    let names: Vec<&String> = plan.moved.keys().collect();
    println!(
        "{} server(s) of {} move behind shortlist: {}",
        names.len(),
        file.display(),
        names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for line in imported.warnings.iter().chain(&imported.errors) {
        println!(
            "  {}",
            line.replacen(&format!("{}: ", preview.path().display()), "", 1)
        );
    }
    println!(
        "they go to {}; {} then starts only '{}' (shortlist serve on that file); the file as it          is now is kept as {}",
        places.servers.display(),
        args.client.label(),
        args.name,
        places.backup.display()
    );
    if !args.apply {
        println!("nothing was written: run again with --apply (and --undo to go back)");
        return Ok(ExitCode::SUCCESS);
    }
    let catalog = super::CatalogArgs {
        config: None,
        paths: vec![places.servers.clone()],
        data_dir: args.catalog.data_dir.clone(),
    };
    let command = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find this program's own path")?;
    // The servers file does not exist yet: its path is made absolute by hand.
    let serve = serve_args(args, &catalog, &CatalogConfig::default())?;
    let entry = client_config::entry(args.client, &command, &serve, &[]);
    apply(&file, plan, &args.name, &entry)?;
    eprintln!(
        "done: {} now starts '{}'; `shortlist install {} --undo` puts the old file back",
        file.display(),
        args.name,
        clap::ValueEnum::to_possible_value(&args.client)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// `serve` and its arguments for `catalog`, every path absolute.
fn serve_args(
    args: &InstallArgs,
    catalog: &super::CatalogArgs,
    cfg: &CatalogConfig,
) -> anyhow::Result<Vec<String>> {
    let abs = |p: &Path| -> anyhow::Result<String> {
        let a = std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .with_context(|| format!("{}: cannot make the path absolute", p.display()))?;
        Ok(a.display().to_string())
    };
    let mut v = vec!["serve".to_string()];
    if let Some(c) = &catalog.config {
        v.extend(["--config".to_string(), abs(c)?]);
    }
    for p in &catalog.paths {
        v.push(abs(p)?);
    }
    if let Some(d) = &catalog.data_dir {
        v.extend(["--data-dir".to_string(), abs(d)?]);
    }
    // The model as this command finds it; what the client would not find alone is pinned.
    let model = args.model.locate(Some(cfg))?;
    let installed = model.model_dir.join("model.onnx").is_file() && model.ort_library.is_file();
    if !installed {
        eprintln!(
            "warning: the embedding model is not installed yet ({} / {}): run {} before starting {}",
            model.model_dir.display(),
            model.ort_library.display(),
            shortlist::index::embedder::setup_script(),
            args.client.label()
        );
    }
    // A client passes no XDG_DATA_HOME (Claude Desktop passes almost nothing), so only the
    // per-user folder under the home folder is found without a flag.
    let xdg = std::env::var_os("XDG_DATA_HOME").is_some();
    let pinned = |o: Origin| match o {
        Origin::Given | Origin::Env(_) | Origin::Checkout => true,
        Origin::UserData => xdg,
        Origin::Missing => false,
    };
    if installed && pinned(model.model_origin) && args.model.model_dir.is_none() {
        v.extend(["--model-dir".to_string(), abs(&model.model_dir)?]);
    }
    if installed && pinned(model.ort_origin) && args.model.ort_library.is_none() {
        v.extend(["--ort-library".to_string(), abs(&model.ort_library)?]);
    }
    if let Some(d) = &args.model.model_dir {
        v.extend(["--model-dir".to_string(), abs(d)?]);
    }
    if let Some(f) = &args.model.ort_library {
        v.extend(["--ort-library".to_string(), abs(f)?]);
    }
    // A query model given by flag or environment (a client passes neither); one named by
    // the catalog config is found there.
    let in_config = cfg.model.as_ref().is_some_and(|m| m.query_dir.is_some());
    if let Some(d) = model
        .query_model_dir
        .as_ref()
        .filter(|_| args.model.query_model_dir.is_some() || !in_config)
    {
        v.extend(["--query-model-dir".to_string(), abs(d)?]);
    }
    if let Some(p) = args.model.pooling {
        v.extend(["--pooling".to_string(), format!("{p:?}").to_lowercase()]);
    }
    if let Some(n) = args.model.max_tokens {
        v.extend(["--max-tokens".to_string(), n.to_string()]);
    }
    if let Some(n) = args.model.embed_threads {
        v.extend(["--embed-threads".to_string(), n.to_string()]);
    }
    v.extend(args.serve_args.iter().cloned());
    Ok(v)
}

/// The environment variables the catalog reads credentials from, sorted, each once.
pub fn credential_variables(cfg: &CatalogConfig) -> Vec<String> {
    let mut vars: Vec<String> = cfg
        .apis
        .iter()
        .filter_map(|a| a.auth.as_ref())
        .flat_map(|auth| auth.env_vars().into_iter().map(str::to_string))
        .collect();
    vars.sort();
    vars.dedup();
    vars
}

/// The client's own configuration file.
fn config_file(client: Client, scope: Option<Scope>) -> anyhow::Result<PathBuf> {
    let home = || dirs::home_dir().context("no home folder (HOME is not set): pass --file FILE");
    let here = || std::env::current_dir().context("cannot read the current folder");
    Ok(match (client, scope) {
        // macOS ~/Library/Application Support/Claude, Windows %APPDATA%\Claude, Linux
        // $XDG_CONFIG_HOME/Claude (~/.config/Claude).
        (Client::ClaudeDesktop, _) => dirs::config_dir()
            .context("no configuration folder (HOME is not set): pass --file FILE")?
            .join("Claude/claude_desktop_config.json"),
        (Client::ClaudeCode, None | Some(Scope::Project)) => here()?.join(".mcp.json"),
        (Client::ClaudeCode, Some(Scope::User)) => home()?.join(".claude.json"),
        (Client::Cursor, Some(Scope::Project)) => here()?.join(".cursor/mcp.json"),
        (Client::Cursor, None | Some(Scope::User)) => home()?.join(".cursor/mcp.json"),
        (Client::McpJson, _) => here()?.join("mcp.json"),
    })
}
