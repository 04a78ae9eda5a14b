//! What operators watch a running server by, besides its logs:
//!
//! - [`metrics`]: Prometheus metrics, recorded at their call sites through the `metrics`
//!   facade and rendered at `/metrics` (for the console's admins);
//! - [`trace`]: OpenTelemetry spans of `find_tools`, `call_tool` and each upstream request,
//!   exported over OTLP/HTTP when the standard `OTEL_EXPORTER_OTLP_*` variables name a
//!   collector, with the W3C `traceparent` sent on to upstream APIs;
//! - [`otlp_http`]: the exporter's HTTP client.
//!
//! Neither carries a person, a secret or request text: labels and span attributes are
//! catalog ids, protocol names and fixed words, and a query's text goes into a span only
//! when the operator asks for it ([`trace::RECORD_TEXT_VAR`]).

pub mod metrics;
pub mod otlp_http;
pub mod trace;
