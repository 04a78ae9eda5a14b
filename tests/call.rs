//! `shortlist call`: one tool call from the command line, through the invoker the server
//! uses, against the recording upstream on 127.0.0.1.

mod server_common;
mod support;

use server_common::*;
use std::process::{Command, Output};
use support::upstream;

fn call(args: &[&str]) -> Output {
    Command::new(shortlist_bin())
        .arg("call")
        .args(args)
        .env(TOKEN_ENV, TOKEN)
        .output()
        .expect("run shortlist call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_reaches_the_upstream_with_credentials() {
    let up = upstream::start().await;
    let fx = Fixture::new(&up.base_url());
    let config = fx.config.display().to_string();
    let out = call(&[
        "getMovieCredits",
        r#"{"movie_id": 550}"#,
        "--config",
        &config,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("cast"), "{stdout}");
    let r = up.only();
    assert_eq!(r.path, "/3/movie/550/credits");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert!(!stdout.contains(TOKEN));

    // Invalid arguments and unknown tools are errors that say what to fix; nothing is sent.
    let out = call(&[
        "getMovieCredits",
        r#"{"movie_id": "x"}"#,
        "--config",
        &config,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("movie_id"));
    let out = call(&["getMovieCredit", "{}", "--config", &config]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("did you mean 'getMovieCredits'"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = call(&["getMovieCredits", "[1]", "--config", &config]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(up.received().len(), 1);
}

/// The README's first call, on the example Open-Meteo spec with its base URL pointed at
/// the recording upstream: the request Open-Meteo would receive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_open_meteo_call_builds_the_forecast_request() {
    let up = upstream::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("catalog.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n[[api]]\nid = \"open_meteo\"\nspec = {:?}\nbase_url = \"http://{}\"\nread_only = true\n",
            dir.path().join("index"),
            repo().join("catalogs/open_meteo.yaml"),
            up.addr
        ),
    )
    .unwrap();
    let out = call(&[
        "get_weather_forecast",
        r#"{"latitude": 52.52, "longitude": 13.41, "current": "temperature_2m,wind_speed_10m"}"#,
        "--config",
        &config.display().to_string(),
    ]);
    // The recording upstream answers 404 to what it does not serve: the request is the point.
    assert_eq!(out.status.code(), Some(2));
    let r = up.only();
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("GET", "/v1/forecast")
    );
    assert_eq!(
        r.query.as_deref(),
        Some("latitude=52.52&longitude=13.41&current=temperature_2m%2Cwind_speed_10m")
    );
}
