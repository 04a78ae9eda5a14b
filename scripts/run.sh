#!/usr/bin/env bash
# Runs shortlist on the example catalogs from a fresh clone: fetches the embedding model and
# ONNX Runtime (idempotent, cached in .vendor/), builds a release binary, indexes
# catalogs/catalog.toml (only changed endpoints are re-embedded) and answers a query.
# Extra arguments replace the query.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup-models.sh
cargo build --release --locked --quiet
bin=target/release/shortlist
"$bin" index --config catalogs/catalog.toml
query="${*:-Who directed the top-1 rated movie?}"
"$bin" search --config catalogs/catalog.toml -k 10 "$query"
