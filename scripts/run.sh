#!/usr/bin/env bash
# Runs the shortlist MCP server on the example catalogs from a fresh clone: fetches the
# embedding model and ONNX Runtime (idempotent, cached in .vendor/), builds a release binary
# and serves catalogs/catalog.toml. `serve` indexes at start-up, embedding only endpoints
# that changed since the last run.
#
# Default: MCP over stdio (what mcp.json configures). Extra arguments go to `serve`, e.g.
#   ./scripts/run.sh --http 127.0.0.1:8765
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup-models.sh
cargo build --release --locked --quiet
exec target/release/shortlist serve --config catalogs/catalog.toml "$@"
