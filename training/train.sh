#!/usr/bin/env bash
# Trains the retrieval model from a clean clone, in one command:
#
#   training/train.sh --query             # the CPU recipe: a query model against cached
#                                         # document vectors (training/train_query.py)
#   training/train.sh --query --sample    # the same on a sample (minutes)
#   training/train.sh --sample            # the full fine-tune on a sample (minutes on a CPU)
#   training/train.sh                     # the full fine-tune of training/README.md (a GPU)
#   training/train.sh --data DIR --out DIR [train.py options]
#
# Makes training/.venv (the pinned packages of training/requirements.txt, from PyPI), builds
# the release `shortlist` that prints the doc texts, then runs training/train.py, which
# writes DIR/model/ (a model folder for `shortlist --model-dir`) and DIR/run.json. The
# corpus defaults to ../shared/train beside the checkout. Idempotent: a venv whose
# requirements are unchanged is reused.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"
python="${PYTHON:-python3}"

stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check -r "$here/requirements.txt"
  echo "$want" >"$stamp"
fi

bin="${SHORTLIST_BIN:-$repo/target/release/shortlist}"
if [ -z "${SHORTLIST_BIN:-}" ]; then
  (cd "$repo" && cargo build --release --quiet --bin shortlist)
fi

script="$here/train.py"
if [ "${1:-}" = --query ]; then
  shift
  script="$here/train_query.py"
fi
exec "$venv/bin/python" "$script" --shortlist "$bin" "$@"
