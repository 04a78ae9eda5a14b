#!/usr/bin/env bash
# The README's "Getting started" steps, run as a newcomer would: `cargo install --path .` into
# a temporary root, a fresh home folder (so the model, the index and the client configuration
# land where a new user's would), and every later step from a folder outside the checkout.
#
# Two stand-ins, because CI has no internet and no desktop client: `serve` is started by the
# Python MCP client through the entry `install` wrote (it needs .venv from
# setup-test-tools.sh), and the Open-Meteo call goes to a local server answering like
# Open-Meteo, through a copy of the example catalog whose base_url points there.
#
#   ./scripts/getting-started.sh            # CI runs it after the tests
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The toolchain stays where it is; everything shortlist keeps per user starts empty.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
real_home="$HOME"
export HOME="$work/home"
mkdir -p "$HOME"
unset XDG_DATA_HOME XDG_CACHE_HOME XDG_CONFIG_HOME SHORTLIST_VENDOR SHORTLIST_MODEL_DIR ORT_DYLIB_PATH SHORTLIST_DATA_DIR
export PATH="$work/inst/bin:$PATH"
# Wheels already fetched for this user are reused (the set-up script downloads otherwise).
if [ -d "$real_home/.cache/shortlist/wheels" ]; then
    mkdir -p "$HOME/.cache/shortlist" && cp -r "$real_home/.cache/shortlist/wheels" "$HOME/.cache/shortlist/"
fi

step() { echo "getting-started: \$ $*" >&2; "$@"; }
fail() { echo "getting-started: FAILED: $*" >&2; exit 1; }

cd "$repo"
# 1. Install (the release build reuses the checkout's target/ when it is warm).
# SHORTLIST_INSTALL_DEBUG=1 installs the debug build instead, which the test command has
# already built: CI checks the steps without compiling everything a third time.
profile=()
[ "${SHORTLIST_INSTALL_DEBUG:-0}" = 1 ] && profile=(--debug)
step cargo install --locked --quiet "${profile[@]}" --path . --root "$work/inst" --target-dir "$repo/target"
[ "$(command -v shortlist)" = "$work/inst/bin/shortlist" ] || fail "shortlist is not the installed one"
# 2. The model, for this user. Copies from the checkout's .vendor/ when present.
step ./scripts/setup-models.sh
[ -f "$HOME/.local/share/shortlist/models/all-MiniLM-L6-v2/model.onnx" ] || fail "no model in the user folder"

cd "$work"
catalog="$repo/catalogs/catalog.toml"
# 3. Index.
step shortlist index --config "$catalog"
ls -d "$HOME"/.cache/shortlist/catalog-* >/dev/null || fail "no index in the user cache folder"
# 5. Connect a client (before 4: the client is what starts the server).
step shortlist install claude-desktop --config "$catalog"
desktop="$HOME/.config/Claude/claude_desktop_config.json"
[ -f "$desktop" ] || fail "no $desktop"
# 4. Serve: the Python MCP client starts the server from that entry and lists its tools.
echo '[{"op": "list_tools"}, {"op": "call", "tool": "find_tools", "args": {"query": "weather forecast for Berlin"}}]' >"$work/steps.json"
step "$repo/.venv/bin/python" "$repo/tests/clients/mcp_client.py" --config-entry "$desktop#shortlist" \
    --mode legacy --script "$work/steps.json" >"$work/serve.json"
grep -q '"find_tools"' "$work/serve.json" || fail "serve: no find_tools"
grep -q 'open_meteo__get_weather_forecast' "$work/serve.json" || fail "serve: find_tools missed the forecast"
# 6. A query.
step shortlist search --config "$catalog" "weather forecast for Berlin" -k 3 | tee "$work/search.txt"
grep -q 'open_meteo__get_weather_forecast' "$work/search.txt" || fail "search: no forecast endpoint in the top 3"
# 7. A call, to a local Open-Meteo stand-in.
"$repo/.venv/bin/python" - "$work/port" <<'PY' &
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlparse, parse_qs
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        u = urlparse(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if u.path != "/v1/forecast" or "latitude" not in q:
            self.send_response(400); self.end_headers(); return
        body = json.dumps({"latitude": float(q["latitude"]), "longitude": float(q["longitude"]),
                           "current_units": {"temperature_2m": "°C"},
                           "current": {"time": "2026-11-24T21:00", "temperature_2m": 4.2,
                                       "requested": q.get("current", "")}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port="$(cat "$work/port")"
cp -r "$repo/catalogs" "$work/catalogs"
python3 - "$work/catalogs/catalog.toml" "http://127.0.0.1:$port" <<'PY'
import sys
path, url = sys.argv[1:]
text = open(path).read()
marker = 'spec = "open_meteo.yaml"\n'
assert marker in text
open(path, "w").write(text.replace(marker, marker + f'base_url = "{url}"\n'))
PY
step shortlist call open_meteo__get_weather_forecast \
    '{"latitude": 52.52, "longitude": 13.41, "current": "temperature_2m,wind_speed_10m"}' \
    --config "$work/catalogs/catalog.toml" | tee "$work/call.txt"
grep -q '"temperature_2m": 4.2' "$work/call.txt" || grep -q '"temperature_2m":4.2' "$work/call.txt" || fail "call: no forecast"
echo "getting-started: every step worked" >&2
