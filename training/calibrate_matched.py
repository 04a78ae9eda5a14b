"""Fit the judgement of whether anything fits a request (`src/shortlist/matched.rs`).

    shortlist eval --suite datasets/suite.toml --json --per-query > suite.json
    python3 training/calibrate_matched.py suite.json [--held-out toolbench]
    python3 training/calibrate_matched.py train.json suite.json --halves \
        --held-out restbench,toolbench,socbench
    python3 training/calibrate_matched.py suite.json train.json --shipped

With `--halves`, the sets are the eval's half splits (`halves` of each query: the catalog
split in two by API; the request put to the half without its gold APIs is a no-match
request, put to the half with them a matchable one), beside each dataset's requests put to
the whole catalog (matchable). `training/nomatch-suite.toml` runs the training sources'
validation requests that way.

Plain Python, no packages. Each query of the suite is a matchable request (its catalog
holds its gold endpoints); the same query put to its catalog without its gold APIs is a
no-match request (`judged_without_gold`: RestBench's queries against the other API of the
merged catalog, toolbench-dev's and socbench-dev's against every other API). The evidence of
each (`Evidence` in matched.rs) is read from the eval's JSON.

The datasets fall in three groups of independent queries: restbench (Spotify, TMDB,
merged), toolbench (toolbench-dev), socbench (one catalog and per domain). A logistic
model is fitted on the groups not held out, each dataset weighing the same, and its
threshold is the lowest that flags at most `--max-false` percent of the matchable requests
of every calibration dataset. The held-out group is reported apart; `--each` holds out
each group in turn. Prints the rates and the constants for matched.rs.
"""

import argparse
import json
import math
import sys

FEATURES = ["cosine", "cosine_gap", "task_cosine", "coverage", "coverage_top"]


def group_of(name):
    return name.split("-", 1)[0]


def features(judged):
    return [judged["evidence"].get(f, 0.0) for f in FEATURES]


def load(paths, halves=False):
    data = {}
    for path in paths:
        report = json.load(open(path) if path != "-" else sys.stdin)
        for name, outcomes in report["outcomes"]:
            pos, neg, hpos, hneg, sizes = [], [], [], [], set()
            for q in outcomes:
                if q.get("judged"):
                    neg.append(features(q["judged"]))
                if q.get("judged_without_gold"):
                    pos.append(features(q["judged_without_gold"]))
                h = q.get("halves")
                if h and h.get("own") and h.get("other"):
                    hneg.append(features(h["own"]))
                    hpos.append(features(h["other"]))
                    sizes.add(h["other_endpoints"])
            if halves:
                data[name] = {"no_match": [], "matchable": neg}
                data[f"{name} halves {'/'.join(map(str, sorted(sizes)))}"] = {
                    "no_match": hpos,
                    "matchable": hneg,
                }
            else:
                data[name] = {"no_match": pos, "matchable": neg}
    return data


def standardise(rows):
    n = len(rows)
    mean = [sum(r[j] for r in rows) / n for j in range(len(FEATURES))]
    sd = [
        math.sqrt(sum((r[j] - mean[j]) ** 2 for r in rows) / n) or 1.0
        for j in range(len(FEATURES))
    ]
    return mean, sd


def fit(points, use, l2=1e-3, steps=3000, lr=0.5):
    """Weighted logistic regression by gradient descent on standardised features; returns
    the weights and bias on the raw features (0 for features not in `use`)."""
    xs = [p[0] for p in points]
    mean, sd = standardise(xs)
    z = [[(x[j] - mean[j]) / sd[j] for j in use] for x in xs]
    y = [p[1] for p in points]
    w8 = [p[2] for p in points]
    tot = sum(w8)
    w = [0.0] * len(use)
    b = 0.0
    for _ in range(steps):
        gw = [0.0] * len(use)
        gb = 0.0
        for zi, yi, wi in zip(z, y, w8):
            s = b + sum(a * c for a, c in zip(w, zi))
            p = 1 / (1 + math.exp(-max(-30, min(30, s))))
            e = (p - yi) * wi
            gb += e
            for j, v in enumerate(zi):
                gw[j] += e * v
        b -= lr * gb / tot
        w = [wj - lr * (gj / tot + l2 * wj) for wj, gj in zip(w, gw)]
    raw = [0.0] * len(FEATURES)
    bias = b
    for k, j in enumerate(use):
        raw[j] = w[k] / sd[j]
        bias -= w[k] * mean[j] / sd[j]
    return raw, bias


def prob(x, w, b):
    s = b + sum(a * c for a, c in zip(w, x))
    return 1 / (1 + math.exp(-max(-30, min(30, s))))


def rate(rows, w, b, t):
    if not rows:
        return None
    return 100 * sum(prob(x, w, b) >= t for x in rows) / len(rows)


def auc(pos, neg, j):
    """How well feature j alone separates (low values = no match)."""
    wins = 0.0
    for p in pos:
        for n in neg:
            wins += 1.0 if p[j] < n[j] else 0.5 if p[j] == n[j] else 0.0
    return wins / max(1, len(pos) * len(neg))


def calibrate(data, held_out, use, max_false, fit_on=None):
    cal = [d for d in data if group_of(d) not in held_out]
    points = []
    for d in [d for d in cal if not fit_on or d in fit_on]:
        for label, key in ((1, "no_match"), (0, "matchable")):
            rows = data[d][key]
            for x in rows:
                points.append((x, label, 1.0 / len(rows)))
    w, b = fit(points, use)
    # The lowest threshold whose false flags stay within max_false on every calibration
    # dataset.
    cands = sorted({prob(x, w, b) for d in cal for x in data[d]["matchable"]})
    t = 1.0
    for c in reversed(cands):
        if all((rate(data[d]["matchable"], w, b, c) or 0) <= max_false for d in cal):
            t = c
        else:
            break
    t = min(1.0, t + 1e-6)
    return w, b, t


def shipped(paths):
    """The shipped judgement's rates on each dataset's half split (the `matched` the eval
    recorded), and the ceiling: the share of no-match requests the same probability flags
    with a threshold set per dataset at 5% of its matchable requests (halves and whole)."""
    print("| dataset | endpoints per half | no-match requests | no match flagged "
          "| matchable flagged (half) | matchable flagged (whole) | ceiling at 5% |")
    print("|---|---|---|---|---|---|---|")
    for path in paths:
        report = json.load(open(path))
        for name, outcomes in report["outcomes"]:
            hs = [q["halves"] for q in outcomes
                  if q.get("halves") and q["halves"].get("own") and q["halves"].get("other")]
            whole = [q["judged"] for q in outcomes if q.get("judged")]
            if not hs:
                continue
            sizes = sorted({h["own_endpoints"] for h in hs} | {h["other_endpoints"] for h in hs})
            no = [h["other"] for h in hs]
            own = [h["own"] for h in hs]
            share = lambda js: 100 * sum(not j["matched"] for j in js) / len(js)
            probs = sorted(j["no_match"] for j in own + whole)
            t = probs[int(0.95 * len(probs))]
            ceiling = 100 * sum(j["no_match"] > t for j in no) / len(no)
            print(f"| {name} | {'/'.join(map(str, sizes))} | {len(no)} | {share(no):.1f} "
                  f"| {share(own):.1f} | {share(whole):.1f} | {ceiling:.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("suite_json", nargs="+")
    ap.add_argument("--halves", action="store_true",
                    help="no-match requests from the half splits (see above)")
    ap.add_argument("--held-out", default="toolbench", help="group(s) left out, comma-separated")
    ap.add_argument("--each", action="store_true", help="hold out each group in turn")
    ap.add_argument("--features", default=",".join(FEATURES))
    ap.add_argument("--fit-on", default="",
                    help="datasets whose requests fit the weights (comma-separated; default: "
                    "every calibration dataset); the threshold still reads every one")
    ap.add_argument("--max-false", type=float, default=5.0,
                    help="percent of matchable requests a calibration dataset may see flagged")
    ap.add_argument("--shipped", action="store_true",
                    help="print the shipped judgement's rates on the half splits, and stop")
    args = ap.parse_args()
    if args.shipped:
        shipped(args.suite_json)
        return
    data = load(args.suite_json, args.halves)
    use = [FEATURES.index(f) for f in args.features.split(",")]

    print("single features, ROC AUC (no-match against matchable, per dataset):")
    for d, v in data.items():
        if v["no_match"]:
            aucs = ", ".join(f"{f} {auc(v['no_match'], v['matchable'], j):.2f}" for j, f in enumerate(FEATURES))
            print(f"  {d}: {aucs}")

    groups = sorted({group_of(d) for d in data})
    runs = [[g] for g in groups] if args.each else [args.held_out.split(",")]
    for held in runs:
        fit_on = [d for d in args.fit_on.split(",") if d and group_of(d) not in held]
        w, b, t = calibrate(data, held, use, args.max_false, fit_on)
        print(f"\nheld out: {','.join(held)}")
        print("| dataset | set | no match flagged | matchable flagged |")
        print("|---|---|---|---|")
        for d, v in data.items():
            side = "held out" if group_of(d) in held else "calibration"
            nm = rate(v["no_match"], w, b, t)
            m = rate(v["matchable"], w, b, t)
            nm_s = "-" if nm is None else f"{nm:.1f} ({len(v['no_match'])})"
            m_s = "-" if m is None else f"{m:.1f} ({len(v['matchable'])})"
            print(f"| {d} | {side} | {nm_s} | {m_s} |")
        print("\npub const CALIBRATION: Calibration = Calibration {")
        print(f"    weights: [{', '.join(f'{x:.4}' for x in w)}],")
        print(f"    bias: {b:.4},")
        print(f"    threshold: {t:.4},")
        print("};")


if __name__ == "__main__":
    main()
