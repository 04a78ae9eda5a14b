#!/usr/bin/env bash
# Fuzzes the spec loader and its nesting limit, $ref resolution, argument validation +
# request building, and secret masking with cargo fuzz (libFuzzer). See docs/fuzzing.md.
#
#   scripts/fuzz.sh                      every target for 20 s (the CI run)
#   scripts/fuzz.sh --time 600           every target for 10 minutes
#   scripts/fuzz.sh --runs 1000000       every target for a million executions
#   scripts/fuzz.sh --target ref_resolve --time 60 [-- <extra libFuzzer flags>]
#
# Exits 0 when no target crashed, 1 when one did (the crashing input is kept in
# fuzz/artifacts/<target>/ and named in the output), 2 on a usage or setup error.
#
# Only a stable toolchain is needed: cargo fuzz passes nightly-only flags to rustc
# (-Zsanitizer=address, sanitizer coverage), which stable accepts with RUSTC_BOOTSTRAP=1.
# Set FUZZ_SANITIZER=none to build without AddressSanitizer (faster build and runs, but
# memory errors in unsafe code, such as the YAML parser's, would go unnoticed), and
# FUZZ_PROFILE=dev to build without optimisations (a shorter build, slower runs: the CI
# smoke run's choice).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

TARGETS_ALL=(spec_load ref_resolve invoke_args spec_nesting redact_secrets)
targets=()
time_secs=20
runs=""
extra=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --time) time_secs="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --target) targets+=("$2"); shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ ${#targets[@]} -eq 0 ]] && targets=("${TARGETS_ALL[@]}")

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
sanitizer="${FUZZ_SANITIZER:-address}"
# One build folder per sanitizer: switching would otherwise rebuild everything.
target_dir="$ROOT/fuzz/target/$sanitizer"
# Allocation stack traces make ASan runs 3x slower here (the harnesses allocate a lot);
# rerun a crashing input without this to get them. The ODR check is off as `cargo fuzz run`
# turns it off: the bundled SQLite amalgamation has two function-local `aiOff` tables that
# ASan takes for one global defined twice, and every target links the store.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0:detect_odr_violation=0}"
# The harnesses write the fuzzed spec and a few sibling files into a scratch folder under
# TMPDIR; give them one of their own and remove it afterwards.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/shortlist-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# --- Seed corpora --------------------------------------------------------------------
# Built afresh from the committed seeds (fuzz/seeds, a few small hand-written specs), the
# example catalogs (big JSON specs are cut into one-path slices) and, when present, the
# smallest specs of the shared real-world corpus. Corpora live in fuzz/corpus (ignored
# by git) and keep what earlier runs found.
slice_json() { # spec.json outdir prefix max-bytes: one seed per path, with the schemas it names
    local spec=$1 out=$2 prefix=$3 max=$4 n i
    n=$(jq '.paths | length' "$spec")
    for ((i = 0; i < n; i += (n / 8 + 1))); do
        jq -c --argjson i "$i" '
          . as $d | (.paths | to_entries)[$i] as $p
          | ([$p.value | .. | objects | .["$ref"]? // empty | strings
              | select(startswith("#/components/schemas/"))
              | ltrimstr("#/components/schemas/")] | unique) as $names
          | {openapi, info: {title: .info.title, version: .info.version}, servers,
             paths: {($p.key): $p.value},
             components: {securitySchemes: .components.securitySchemes,
                          parameters: .components.parameters,
                          schemas: (($d.components.schemas // {})
                                    | with_entries(select(.key as $k | $names | index($k))))}}' \
            "$spec" >"$out/$prefix-$i.json"
        # Bigger seeds would slow every execution down (and be cut at -max_len).
        [[ $(wc -c <"$out/$prefix-$i.json") -le $max ]] || rm "$out/$prefix-$i.json"
    done
}

build_seeds() {
    local t=$1 dir="$ROOT/fuzz/corpus/$1"
    mkdir -p "$dir"
    [[ -d "$ROOT/fuzz/seeds/$t" ]] && cp "$ROOT"/fuzz/seeds/"$t"/* "$dir"/
    local max
    case "$t" in
        spec_load) max=32768 ;;
        ref_resolve) max=8192 ;;
        *) max=0 ;;
    esac
    if [[ $max -gt 0 ]] && command -v jq >/dev/null; then
        slice_json "$ROOT/catalogs/tmdb.json" "$dir" seed-tmdb "$max"
        slice_json "$ROOT/catalogs/spotify.json" "$dir" seed-spotify "$max"
    fi
    if [[ "$t" == spec_load ]]; then
        cp "$ROOT/catalogs/musixmatch.yaml" "$dir/seed-musixmatch.yaml"
        local shared="${SHORTLIST_SPEC_CORPUS:-$ROOT/../shared/corpus}"
        if [[ -d "$shared" ]]; then
            # The 24 smallest real specs (all under 16 KB): real defects, little time.
            find "$shared" -maxdepth 1 -type f \( -name '*.yaml' -o -name '*.json' \) -size -16k \
                -printf '%s %p\n' | sort -n | head -24 | cut -d' ' -f2- |
                while read -r f; do cp "$f" "$dir/seed-$(basename "$f")"; done
        fi
    fi
}

flags_for() {
    case "$1" in
        spec_load) echo "-dict=$ROOT/fuzz/dict/openapi.dict -max_len=32768" ;;
        ref_resolve) echo "-dict=$ROOT/fuzz/dict/openapi.dict -max_len=8192" ;;
        invoke_args) echo "-dict=$ROOT/fuzz/dict/invoke_args.dict -max_len=4096" ;;
        spec_nesting) echo "-max_len=64" ;;
        redact_secrets) echo "-max_len=512" ;;
    esac
}

# --- Build once, then run each target --------------------------------------------------
cd "$ROOT/fuzz"
echo "fuzz.sh: building fuzz targets (sanitizer: $sanitizer, profile: ${FUZZ_PROFILE:-release})" >&2
build_start=$(date +%s)
profile="${FUZZ_PROFILE:-release}"
case "$profile" in
    release) profile_flags=(); profile_dir=release ;;
    dev) profile_flags=(--dev); profile_dir=debug ;;
    *) echo "fuzz.sh: FUZZ_PROFILE is release or dev, not '$profile'" >&2; exit 2 ;;
esac
nice -n 10 cargo fuzz build "${profile_flags[@]}" --sanitizer "$sanitizer" --target-dir "$target_dir"
echo "fuzz.sh: build took $(($(date +%s) - build_start)) s" >&2
# The binaries are run directly rather than through `cargo fuzz run`, which would rebuild
# whenever a source file changed in the meantime.
host=$(rustc -vV | sed -n 's/^host: //p')
bin_dir="$target_dir/$host/$profile_dir"

failed=()
for t in "${targets[@]}"; do
    if [[ ! " ${TARGETS_ALL[*]} " == *" $t "* ]]; then
        echo "fuzz.sh: unknown target '$t' (targets: ${TARGETS_ALL[*]})" >&2
        exit 2
    fi
    build_seeds "$t"
    mkdir -p "$ROOT/fuzz/artifacts/$t"
    if [[ -n "$runs" ]]; then limit="-runs=$runs"; else limit="-max_total_time=$time_secs"; fi
    echo "fuzz.sh: === $t ($limit) ===" >&2
    start=$(date +%s)
    # shellcheck disable=SC2046 # flags_for yields separate words on purpose
    log="$scratch/$t.log"
    if TMPDIR="$scratch" nice -n 10 "$bin_dir/$t" "$limit" -rss_limit_mb=4096 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/artifacts/$t/" $(flags_for "$t") \
        "${extra[@]}" "$ROOT/fuzz/corpus/$t" 2>&1 | tee "$log" >&2; then
        # A binary whose `main` is not libFuzzer's exits 0 without fuzzing: only libFuzzer's
        # closing line says the inputs really ran.
        if ! grep -qE '^Done [0-9]+ runs' "$log"; then
            echo "fuzz.sh: $t: libFuzzer did not run (no 'Done N runs' line)" >&2
            failed+=("$t")
            continue
        fi
        echo "fuzz.sh: $t: no crash in $(($(date +%s) - start)) s" >&2
    else
        echo "fuzz.sh: $t: CRASH (input in fuzz/artifacts/$t/; reproduce with" \
            "$bin_dir/$t <input>, or SHORTLIST_FUZZ_DEBUG=1 to see what it generated)" >&2
        failed+=("$t")
    fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz.sh: failed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz.sh: all targets ran without a crash" >&2
