#!/usr/bin/env bash
# Cold starts of `shortlist search`: N fresh processes, each timed by /usr/bin/time; prints
# each run's wall time, then the medians of wall, CPU (user + system) and system time, the
# fastest run and the median peak RSS.
#
#   scripts/cold-start.sh BIN N SEARCH-ARGS...
#   scripts/cold-start.sh target/release/shortlist 10 "create a new invoice" -k 5 --data-dir D
#
# SHORTLIST_SMALL_PAGES=1 in the environment measures a start in 4 KB pages.
set -euo pipefail
bin=$1
n=$2
shift 2
t=$(mktemp)
trap 'rm -f "$t"' EXIT
for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M" -o "$t" "$bin" search "$@" >/dev/null 2>&1
    cat "$t"
done | python3 -c '
import sys, statistics as st
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
wall = [r[0] for r in rows]
cpu = [r[1] + r[2] for r in rows]
sys_ = [r[2] for r in rows]
rss = [r[3] for r in rows]
print("walls", " ".join("%.2f" % x for x in wall))
print("median wall %.3f  median cpu %.3f (sys %.3f)  min wall %.3f  min cpu %.3f  rss %d MB  n=%d"
      % (st.median(wall), st.median(cpu), st.median(sys_), min(wall), min(cpu), st.median(rss) / 1024, len(wall)))'
