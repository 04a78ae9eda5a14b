#!/usr/bin/env bash
# The retrieval model's training, end to end on a sample: the pipeline's own checks,
# `training/train.sh --sample` on the corpus beside the clone, then the trained model loaded
# and measured by `shortlist eval --model-dir` on RestBench Spotify; then the CPU recipe
# (`training/train.sh --query --sample`), its two query models measured the same way with
# `--query-model-dir`. Uses the debug
# `shortlist` that the tests build ($SHORTLIST_BIN for another). Costs, measured on a 2-core
# machine: the training venv (2.8 GB of torch and CUDA wheels, 6 GB installed; about 3.5
# minutes the first time) and about 3.5 minutes of training and export. Not run by .ci/run:
# training/README.md ("Not in CI") says why.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

data="${SHORTLIST_TRAIN_DATA:-$PWD/../shared/train}"
out="$PWD/target/train-sample"
bin="${SHORTLIST_BIN:-$PWD/target/debug/shortlist}"
[ -x "$bin" ] || cargo build --locked --bin shortlist

echo "train-sample: the training pipeline on a sample of $data"
rm -rf "$out"
SHORTLIST_BIN="$bin" training/train.sh --sample --data "$data" --out "$out"
training/.venv/bin/python -m unittest discover -s training -p 'test_*.py'

# The exported folder is a model shortlist loads; its sha256 is the one run.json reports.
test "$(sha256sum "$out/model/model.onnx" | cut -d' ' -f1)" = \
  "$(training/.venv/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_sha256"])' "$out/run.json")"
SHORTLIST_EVAL_CACHE="$out/eval" "$bin" eval --model-dir "$out/model" \
  datasets/restbench/spotify_oas.json datasets/restbench/spotify_queries.jsonl

# The CPU recipe on a sample: a query model and a linear map, each loaded beside the shipped
# document model by `--query-model-dir`.
echo "train-sample: the query-side recipe on a sample of $data"
SHORTLIST_BIN="$bin" training/train.sh --query --sample --data "$data" --out "$out/query"
for m in query-model linear-model; do
  SHORTLIST_EVAL_CACHE="$out/eval" "$bin" eval --query-model-dir "$out/query/$m" \
    datasets/restbench/spotify_oas.json datasets/restbench/spotify_queries.jsonl
done
