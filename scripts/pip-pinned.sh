# Sourced by the setup scripts: pinned Python packages in a git-ignored virtual environment,
# installed only when missing or at another version.
#
#   pinned_venv DIR              creates the venv DIR if needed; prints its python
#   pinned_missing PY SPEC...    prints the name==version specs PY lacks (one python start)
#   pinned_install LABEL PY [--no-deps] SPEC...
#                                pip-installs the specs PY lacks; fails naming LABEL

pinned_venv() {
  if [ ! -x "$1/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$1" >&2 || { echo "$1: python3 -m venv failed" >&2; return 1; }
  fi
  echo "$1/bin/python"
}

pinned_missing() {
  local py=$1
  shift
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

pinned_install() {
  local label=$1 py=$2
  shift 2
  local opts=()
  if [ "${1:-}" = "--no-deps" ]; then
    opts=(--no-deps)
    shift
  fi
  local todo
  mapfile -t todo < <(pinned_missing "$py" "$@")
  [ "${#todo[@]}" -eq 0 ] && return 0
  echo "$label: pip install ${opts[*]} ${todo[*]}" >&2
  "$py" -m pip install --quiet --disable-pip-version-check "${opts[@]}" "${todo[@]}" >&2 \
    || { echo "$label: pip install ${todo[*]} failed" >&2; return 1; }
}
