//! OpenTelemetry traces: spans for `find_tools`, `call_tool` and each upstream request,
//! exported over OTLP/HTTP (protobuf), and the W3C trace context sent on to upstream APIs.
//!
//! Configured the standard way, by environment: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) turns export on, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME` (default `shortlist`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*` and
//! `OTEL_SDK_DISABLED` work as the specification says. Without them nothing is exported
//! and no `traceparent` is sent.
//!
//! The spans are `tracing` spans (`tracing-opentelemetry` turns them into OpenTelemetry
//! ones), so a text or JSON log line inside one names it too. Their attributes are
//! catalog ids, tool names, methods, path templates and status codes: never a header, a
//! URL's query string, an argument or a person. A `find_tools` query is recorded only
//! when [`RECORD_TEXT_VAR`] says so.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::OnceLock;
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Set to `1` (or `true`) to record a `find_tools` query's text in its span
/// (`shortlist.query`): requests can carry what people typed, so it is off by default.
pub const RECORD_TEXT_VAR: &str = "SHORTLIST_TRACE_QUERY_TEXT";

/// Where spans come from: the OpenTelemetry layer takes only these (never log events,
/// whose text is masked on its way to stderr but would not be on its way to a collector).
pub const TARGET: &str = "shortlist";

/// A tracer provider exporting to the collector the environment names, or `None` when it
/// names none (or disables the SDK). Spans are batched and sent from a thread of the SDK's.
pub fn provider_from_env() -> anyhow::Result<Option<SdkTracerProvider>> {
    let set = |v: &str| std::env::var(v).is_ok_and(|s| !s.trim().is_empty());
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.eq_ignore_ascii_case("none"))
        || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    {
        return Ok(None);
    }
    let client = super::otlp_http::BlockingReqwest::new(Duration::from_secs(10))
        .map_err(|e| anyhow::anyhow!("OpenTelemetry: cannot create the HTTP client: {e}"))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_http_client(client)
        .build()
        .map_err(|e| anyhow::anyhow!("OpenTelemetry: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if !set("OTEL_SERVICE_NAME") {
        resource = resource.with_service_name("shortlist");
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    Ok(Some(provider))
}

/// The `tracing` layer that turns this crate's spans into OpenTelemetry spans of
/// `provider`.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer as _;
    let spans_only = tracing_subscriber::filter::filter_fn(|meta| {
        meta.is_span() && meta.target().starts_with(TARGET)
    });
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("shortlist"))
        .with_tracked_inactivity(false)
        .with_filter(spans_only)
}

/// Whether a `find_tools` query's text goes into its span.
pub fn record_text() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var(RECORD_TEXT_VAR).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    })
}

/// The span of one `find_tools` call; `shortlist.hits` is recorded when it is answered.
pub fn find_tools_span(query: Option<&str>) -> tracing::Span {
    let span = tracing::info_span!(
        target: "shortlist::trace",
        "find_tools",
        gen_ai.tool.name = "find_tools",
        shortlist.hits = tracing::field::Empty,
        shortlist.query = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if let Some(q) = query.filter(|_| record_text()) {
        span.record("shortlist.query", q);
    }
    span
}

/// The span of one call of the endpoint `tool` of `api` (directly or through `call_tool`).
pub fn call_tool_span(tool: &str, api: &str) -> tracing::Span {
    tracing::info_span!(
        target: "shortlist::trace",
        "call_tool",
        gen_ai.tool.name = tool,
        shortlist.api = api,
        shortlist.is_error = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// The client span of one upstream request: `METHOD /path/{template}`, never the URL
/// with its values or query string.
pub fn upstream_span(api: &str, method: &str, path_template: &str, host: &str) -> tracing::Span {
    tracing::info_span!(
        target: "shortlist::trace",
        "upstream",
        otel.name = %format!("{method} {path_template}"),
        otel.kind = "client",
        http.request.method = method,
        url.template = path_template,
        server.address = host,
        shortlist.api = api,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Records on the current span that it ended in an error.
pub fn mark_error(span: &tracing::Span) {
    span.record("otel.status_code", "ERROR");
}

/// The W3C trace context (`traceparent`, `tracestate`) of the current span, as headers for
/// an upstream request; empty when no span is exported.
pub fn context_headers() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut opentelemetry_http::HeaderInjector(&mut headers))
    });
    headers
}
