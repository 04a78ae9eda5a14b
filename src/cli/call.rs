//! `shortlist call TOOL ARGUMENTS`: one tool call from the command line, through the same
//! invoker the MCP server uses (validation, credentials from the environment, the hosts
//! the catalog declares, masked secrets). The quickest way to see that an API answers.

use super::CatalogArgs;
use anyhow::Context;
use clap::Args;
use serde_json::Value;
use shortlist::invoke::Invoker;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The tool name, as `search` or `find_tools` shows it.
    #[arg(value_name = "TOOL")]
    pub name: String,
    /// The arguments as a JSON object, e.g. '{"latitude": 52.52, "longitude": 13.41}'.
    #[arg(value_name = "ARGUMENTS", default_value = "{}")]
    pub arguments: String,
    #[command(flatten)]
    pub catalog: CatalogArgs,
}

pub fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = match serde_json::from_str::<Value>(&args.arguments) {
        Ok(Value::Object(o)) => o,
        Ok(_) => anyhow::bail!("ARGUMENTS must be a JSON object, e.g. '{{\"id\": 1}}'"),
        Err(e) => anyhow::bail!("ARGUMENTS is not valid JSON: {e}"),
    };
    let cfg = args.catalog.config()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // The MCP servers are started once: listed for the catalog, then called.
    let upstreams = shortlist::upstream::Upstreams::new(&cfg);
    let listings = runtime.block_on(upstreams.list_all());
    let catalog = super::load_catalog_listed(&cfg, Some(&listings))?;
    let Some(ep) = catalog.endpoints.iter().find(|e| e.tool_name == args.name) else {
        let near = shortlist::invoke::near::closest(
            &args.name,
            catalog.endpoints.iter().map(|e| e.tool_name.as_str()),
        );
        match near {
            Some(n) => anyhow::bail!("no tool named '{}'; did you mean '{n}'?", args.name),
            None => anyhow::bail!(
                "no tool named '{}'; `shortlist search` lists tool names",
                args.name
            ),
        }
    };
    let invoker = Invoker::new()
        .context("cannot create the HTTP client")?
        .with_upstream(&catalog.config.upstream.clone().unwrap_or_default())?
        .with_upstreams(std::sync::Arc::clone(&upstreams));
    let outcome = runtime.block_on(async {
        let outcome = invoker
            .call(ep, catalog.config.api(&ep.api), &arguments)
            .await;
        upstreams.stop().await;
        outcome
    });
    println!("{}", outcome.text);
    if outcome.is_error {
        eprintln!(
            "shortlist: the call failed{}",
            outcome
                .status
                .map(|s| format!(" (HTTP {s})"))
                .unwrap_or_default()
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
