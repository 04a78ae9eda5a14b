#!/usr/bin/env bash
# Runs every test from a fresh clone: fetches the embedding model and ONNX Runtime, the
# Python MCP client, the local LLM and the Node MCP tools (all idempotent, cached in
# git-ignored folders), then the whole cargo test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

./scripts/setup-models.sh
./scripts/setup-test-tools.sh

# Two cores: keep the ONNX Runtime and the test harness from oversubscribing them.
export SHORTLIST_EMBED_THREADS="${SHORTLIST_EMBED_THREADS:-1}"
# Library, binaries and integration tests. Not `--all-targets`: it selects the benches too,
# and a `harness = false` bench run as a test is the whole benchmark.
cargo test --lib --bins --tests --locked "$@"
