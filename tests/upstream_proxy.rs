//! Egress proxies: one from the environment (`HTTP_PROXY` and its kin) is never used, so a
//! proxy never resolves a name the address policy did not see; one configured in the
//! catalog config (`[upstream] proxy`) carries only calls whose target was resolved and
//! checked here first, and its credentials go to it alone.
//!
//! Each test runs `shortlist call` against real listeners on 127.0.0.1.

mod server_common;
mod support;

use server_common::shortlist_bin;
use std::path::Path;
use std::process::{Command, Output};
use support::proxy::Proxy;

const PROXY_ANSWER: &str = r#"{"AccessKeyId": "from-the-proxy"}"#;

/// A spec for API `id` with one GET `/meta-data/iam` on `server`: the tool
/// `<id>__<id>Iam` in a catalog of several APIs.
fn spec(dir: &Path, id: &str, server: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{id}.json"));
    let doc = serde_json::json!({
        "openapi": "3.0.0",
        "info": {"title": id, "version": "1"},
        "servers": [{"url": server}],
        "paths": {"/meta-data/iam": {"get": {"operationId": format!("{id}Iam"),
            "responses": {"200": {"description": "ok"}}}}}
    });
    std::fs::write(&p, doc.to_string()).expect("write spec");
    p
}

/// A catalog config: `head` first, then one `[[api]]` per `(id, server, extra keys)`.
fn config(dir: &Path, head: &str, apis: &[(&str, &str, &str)]) -> String {
    let mut toml = format!("data_dir = {:?}\n{head}\n", dir.join("index"));
    for (id, server, extra) in apis {
        toml.push_str(&format!(
            "\n[[api]]\nid = {id:?}\nspec = {:?}\ntimeout_secs = 3\n{extra}\n",
            spec(dir, id, server)
        ));
    }
    let path = dir.join("catalog.toml");
    std::fs::write(&path, toml).expect("write config");
    path.display().to_string()
}

/// Runs `shortlist call <tool> {} --config <config>` with `env` set and every proxy
/// variable of the test's own environment removed.
fn call(tool: &str, config: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(shortlist_bin());
    cmd.args(["call", tool, "{}", "--config", config]);
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("RUST_LOG", "debug");
    cmd.envs(env.iter().copied());
    cmd.output().expect("run shortlist call")
}

const PROXY_VARS: [&str; 8] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxies_from_the_environment_are_never_used() {
    let proxy = Proxy::start(PROXY_ANSWER, false).await;
    let origin = Proxy::start(r#"{"direct": true}"#, false).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        "",
        &[
            ("meta", "http://metadata.attacker.test/latest", ""),
            ("local", &format!("{}/latest", origin.url()), ""),
        ],
    );
    let url = proxy.url();
    let env: Vec<(&str, &str)> = PROXY_VARS[..6].iter().map(|v| (*v, url.as_str())).collect();

    // The name is not resolved here, so the call fails; no proxy resolves it instead.
    let out = call("meta__metaIam", &cfg, &env);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(!said.contains("from-the-proxy"), "{said}");
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());

    // A local API is called directly, as without the variables.
    let out = call("local__localIam", &cfg, &env);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("direct"), "{said}");
    assert_eq!(origin.seen().len(), 1);
    assert_eq!(origin.seen()[0].line, "GET /latest/meta-data/iam HTTP/1.1");
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());

    // Opting in with `proxy_env = true` uses them, under the same checks as a configured
    // proxy: the unresolvable name is still refused before anything leaves.
    let cfg = config(
        dir.path(),
        "[upstream]\nproxy_env = true\n",
        &[
            ("meta", "http://metadata.attacker.test/latest", ""),
            ("local", &format!("{}/latest", origin.url()), ""),
        ],
    );
    let out = call("meta__metaIam", &cfg, &env);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("proxy_resolves"), "{said}");
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
    let out = call("local__localIam", &cfg, &env);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(proxy.seen().len(), 1, "{:?}", proxy.seen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_proxy_carries_only_targets_checked_here() {
    let proxy = Proxy::start(PROXY_ANSWER, false).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        &format!("[upstream]\nproxy = {:?}\n", proxy.url()),
        &[
            ("meta", "http://metadata.attacker.test/latest", ""),
            ("literal", "http://169.254.169.254/latest", ""),
            ("mapped", "http://[::ffff:169.254.169.254]/latest", ""),
            (
                "outside",
                "http://api.outside.test/latest",
                "proxy_resolves = true",
            ),
            ("local", "http://127.0.0.1:9/latest", ""),
        ],
    );

    // A name that cannot be resolved and checked here is refused before anything leaves.
    let out = call("meta__metaIam", &cfg, &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("metadata.attacker.test") && said.contains("proxy_resolves = true"),
        "{said}"
    );
    // Metadata addresses are refused as without a proxy.
    for tool in ["literal__literalIam", "mapped__mappedIam"] {
        let out = call(tool, &cfg, &[]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("refusing to connect to"), "{said}");
    }
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());

    // What passes the checks goes through the proxy, the target in absolute form.
    let out = call("local__localIam", &cfg, &[]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("from-the-proxy"), "{said}");
    // An API whose entry says the proxy resolves its names is handed over unresolved.
    let out = call("outside__outsideIam", &cfg, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<String> = proxy.seen().into_iter().map(|s| s.line).collect();
    assert_eq!(
        lines,
        [
            "GET http://127.0.0.1:9/latest/meta-data/iam HTTP/1.1",
            "GET http://api.outside.test/latest/meta-data/iam HTTP/1.1",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_credentials_go_to_the_proxy_and_nowhere_else() {
    const USER: &str = "egress-user";
    const PASSWORD: &str = "pr0xy-s3cret-Pass";
    // What `Proxy-Authorization: Basic` carries: base64 of `egress-user:pr0xy-s3cret-Pass`.
    const BASIC: &str = "ZWdyZXNzLXVzZXI6cHIweHktczNjcmV0LVBhc3M=";
    let proxy = Proxy::start("", true).await;
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        &format!(
            "[upstream]\nproxy = \"http://{USER}:{PASSWORD}@127.0.0.1:{}\"\n",
            proxy.port
        ),
        &[
            ("local", "http://127.0.0.1:9/latest", ""),
            ("spare", "http://127.0.0.1:9/spare", ""),
        ],
    );
    let out = call("local__localIam", &cfg, &[]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let seen = proxy.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("proxy-authorization"),
        Some(format!("Basic {BASIC}").as_str())
    );
    assert_eq!(seen[0].header("authorization"), None);
    assert_eq!(
        seen[0].line,
        "GET http://127.0.0.1:9/latest/meta-data/iam HTTP/1.1"
    );
    // The proxy repeated the request head in its answer, and the debug log ran: neither
    // the result nor the log shows the credentials.
    assert!(said.contains("head"), "{said}");
    assert!(!said.contains(PASSWORD) && !said.contains(BASIC), "{said}");

    // A proxy that cannot be reached: the error names no credential either.
    let cfg = config(
        dir.path(),
        &format!("[upstream]\nproxy = \"http://{USER}:{PASSWORD}@127.0.0.1:9\"\n"),
        &[
            ("local", "http://127.0.0.1:9/latest", ""),
            ("spare", "http://127.0.0.1:9/spare", ""),
        ],
    );
    let out = call("local__localIam", &cfg, &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(!said.contains(PASSWORD) && !said.contains(BASIC), "{said}");
    // It says the call went through the proxy, so the operator looks at the right host.
    assert!(
        said.contains("through the proxy at http://127.0.0.1:9"),
        "{said}"
    );
}

/// `serve --upstream-proxy` is checked as the config's proxy is, before anything starts:
/// a proxy on a metadata address is refused, and the message holds no credential.
#[test]
fn the_serve_flag_refuses_a_proxy_on_a_metadata_address() {
    let dir = tempfile::tempdir().expect("tmp");
    let cfg = config(
        dir.path(),
        "",
        &[("local", "http://127.0.0.1:9/latest", "")],
    );
    let mut cmd = Command::new(shortlist_bin());
    cmd.args([
        "serve",
        "--config",
        &cfg,
        "--upstream-proxy",
        "http://egress-user:pr0xy-s3cret-Pass@169.254.169.254:80",
    ]);
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run shortlist serve");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("169.254.169.254"), "{said}");
    assert!(!said.contains("pr0xy-s3cret-Pass"), "{said}");
    assert!(
        !dir.path().join("index").exists(),
        "nothing indexed: {said}"
    );
}
