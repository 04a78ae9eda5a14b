"""The CPU recipe: train the query encoder against document vectors cached once.

    python training/train_query.py --data ../shared/train --out training/out/query [--sample]

Documents are embedded once by the document model the index uses (the shipped int8 model by
default), as `shortlist index` embeds them, and cached (training/docvecs.py). Only requests go
through the network being trained, and requests are about 20 tokens against up to 256 for a
document: a step costs a tenth of a full fine-tune's, so the recipe fits two CPU cores. The
index keeps its vectors: a model trained here is a *query* model, served beside the document
model (`shortlist --query-model-dir DIR`).

Two query models come out of one run, each a model folder `shortlist` loads:

- `OUT/linear-model/`: the shipped model with one learned 384x384 map after its last layer
  (minutes of training on the cached vectors of the requests);
- `OUT/query-model/`: a copy of all-MiniLM-L6-v2 fine-tuned as the query encoder, exported
  int8 as the shipped model is (training/export_onnx.py).

Loss (both): softmax cross-entropy of the request's cosine to each of its positive
documents (scale 20) against every other cached document of the same source: the other
requests' positives, the hard negatives of training/pairs.py and, for the sources of at most
`--catalog-max` endpoints, the rest of the catalog. Documents of any gold endpoint of the
request (or with the same text) are never negatives. Each request goes through the network
once per epoch, its positives (one per gold endpoint, at most 3) sharing the forward pass;
batches are drawn from requests of similar length, so little is padding. Pairs, caps and
masks as in training/pairs.py; apisguru, whose documents are the longest and whose
requests are documentation sentences, is sampled (`--apisguru-pairs`). Validation queries
(`queries.val.jsonl`) are never trained on and give the R@10 that run.json reports before
and after. Everything random is seeded.
"""

import argparse
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
import docvecs  # noqa: E402
import export_onnx  # noqa: E402
import pairs as pairs_mod  # noqa: E402
import train as train_mod  # noqa: E402

HERE = Path(__file__).resolve().parent


class Candidates:
    """Every cached document, per source: its vector, its source, and which endpoints it is
    a text of (equal texts of one source are one candidate)."""

    def __init__(self):
        self.texts, self.sources, self.where, self.of_endpoint = [], [], {}, {}

    def add(self, source, text, endpoint=None):
        key = (source, docvecs.text_sha(text))
        i = self.where.get(key)
        if i is None:
            i = self.where[key] = len(self.texts)
            self.texts.append(text)
            self.sources.append(source)
        if endpoint is not None:
            self.of_endpoint.setdefault((source, endpoint), set()).add(i)
        return i

    def index(self, source, text):
        return self.where[(source, docvecs.text_sha(text))]

    def of_gold(self, source, gold):
        out = set()
        for g in gold:
            out |= self.of_endpoint.get((source, g), set())
        return out


def read_val(data, source):
    path = Path(data) / source / "queries.val.jsonl"
    return pairs_mod.read_queries(path) if path.exists() else []


def recall_at(scores, gold_idx, k=10):
    top = set(np.argsort(-scores)[:k].tolist())
    return sum(1 for g in gold_idx if g in top) / max(1, len(gold_idx))


class Validation:
    """R@10 of validation requests against their source's catalog (gold documents masked as
    in training where the request was taken from them)."""

    def __init__(self, data, sources, docs, cands):
        self.rows = []  # (source, query, [candidate index of each gold], {full idx: masked idx})
        self.full = {}  # source: candidate indexes of its catalog's documents
        for s in sources:
            full = sorted({cands.index(s, d["text"]) for d in docs[s].values()})
            for q in read_val(data, s):
                gold = [g for g in q["gold"] if g in docs[s]]
                if not gold:
                    continue
                swap = {}
                if q.get("mask"):
                    for g in gold:
                        swap[cands.index(s, docs[s][g]["text"])] = cands.add(
                            s, docs[s][g]["masked"][q["mask"]], g
                        )
                self.rows.append((s, q["query"], [cands.index(s, docs[s][g]["text"]) for g in gold], swap))
            self.full[s] = np.array(full, dtype=np.int64)

    def queries(self):
        return [r[1] for r in self.rows]

    def score(self, qvecs, dvecs):
        """{source: R@10, "macro": mean over sources}."""
        per = {}
        for (s, _, gold, swap), q in zip(self.rows, qvecs):
            idx = self.full[s]
            scores = dvecs[idx] @ q
            pos = {int(c): j for j, c in enumerate(idx)}
            for full_i, masked_i in swap.items():
                scores[pos[full_i]] = dvecs[masked_i] @ q
            per.setdefault(s, []).append(recall_at(scores, [pos[g] for g in gold]))
        out = {s: round(100 * float(np.mean(v)), 1) for s, v in per.items()}
        out["macro"] = round(float(np.mean(list(out.values()))), 1) if out else 0.0
        return out


def batch_loss(q, dvecs, cand_src, targets, src_ids, forbid, scale):
    """Cross-entropy of each row (a request vector and one of its positives) over the
    candidates of its own source, the `forbid` ones (its other gold documents) left out."""
    logits = scale * (q @ dvecs.T)
    mask = cand_src[None, :] != src_ids[:, None]
    for b, f in enumerate(forbid):
        if f:
            mask[b, f] = True
    logits = logits.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(logits, targets)


class Requests:
    """The training requests, each once: its text, source and positives (candidate
    indexes, one per pair), and the rows the loss reads (one per positive)."""

    def __init__(self, pairs, rows, forbid, src_names):
        by_text = {}
        self.items = []  # (query, source id, [row numbers])
        for r, (p, pos) in enumerate(zip(pairs, rows)):
            key = (p.source, p.query)
            if key not in by_text:
                by_text[key] = len(self.items)
                self.items.append((p.query, src_names.index(p.source), []))
            self.items[by_text[key]][2].append(r)
        self.target = torch.tensor(rows)
        self.src = torch.tensor([src_names.index(p.source) for p in pairs])
        self.forbid = forbid

    def batches(self, size, tokens, seed):
        """Batches of about `size` requests of similar length (by `tokens`, a length per
        item), in a seeded random order."""
        rng = random.Random(seed)
        order = sorted(range(len(self.items)), key=lambda i: (tokens[i], rng.random()))
        out = [order[s : s + size] for s in range(0, len(order), size)]
        rng.shuffle(out)
        return out

    def loss(self, qvecs, items, dvecs, cand_src, scale):
        """The mean loss over the rows of `items`, whose request vectors are `qvecs`."""
        expand, rows = [], []
        for j, i in enumerate(items):
            for r in self.items[i][2]:
                expand.append(j)
                rows.append(r)
        q = qvecs[torch.tensor(expand)]
        return batch_loss(q, dvecs, cand_src, self.target[rows], self.src[rows],
                          [self.forbid[r] for r in rows], scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", default=str(HERE.parent.parent / "shared" / "train"))
    ap.add_argument("--out", default=str(HERE / "out" / "query"))
    ap.add_argument("--shortlist", default=str(HERE.parent / "target" / "release" / "shortlist"),
                    help="the shortlist binary that prints the doc texts")
    ap.add_argument("--sample", action="store_true",
                    help="a short run: 64 pairs per source, candidates = the pairs' documents")
    ap.add_argument("--sources", default=",".join(pairs_mod.DEFAULT_SOURCES))
    ap.add_argument("--per-source", type=int, default=None, help="at most N pairs per source")
    ap.add_argument("--doc-model", default=None,
                    help="the document model's model.onnx (default: the shipped int8 model)")
    ap.add_argument("--candidates", choices=["catalog", "pairs"], default="catalog",
                    help="negatives: every document of the catalog of a source of at most "
                    "--catalog-max endpoints, or only the pairs' own positives and hard negatives")
    ap.add_argument("--catalog-max", type=int, default=5000,
                    help="a larger source's catalog is not embedded whole (apisguru: 14,563)")
    ap.add_argument("--apisguru-pairs", type=int, default=1000,
                    help="pairs sampled from apisguru (0: all)")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--warmup", type=float, default=0.1)
    ap.add_argument("--scale", type=float, default=20.0)
    ap.add_argument("--query-tokens", type=int, default=64)
    ap.add_argument("--linear-epochs", type=float, default=20.0)
    ap.add_argument("--linear-lr", type=float, default=1e-3)
    ap.add_argument("--linear-decay", type=float, default=1e-2,
                    help="weight of |W - I|^2 in the map's loss (keeps it near the identity)")
    ap.add_argument("--skip-encoder", action="store_true", help="train the linear map only")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="stop the encoder's training after this long and export what there is")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=None, help="torch and ONNX Runtime threads")
    ap.add_argument("--no-verify", action="store_true", help="skip the data manifest check")
    args = ap.parse_args()
    if args.sample:
        args.per_source = args.per_source or 64
        args.candidates = "pairs"
        args.epochs = min(args.epochs, 1.0)
        args.linear_epochs = min(args.linear_epochs, 5.0)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    if not data.is_dir():
        raise SystemExit(f"{data}: no training corpus there (pass --data DIR)")
    if not args.no_verify:
        train_mod.verify_manifest(data, HERE / "data-manifest.sha256")
    if not Path(args.shortlist).is_file():
        raise SystemExit(f"{args.shortlist}: no shortlist binary (cargo build --release, or --shortlist)")
    train_mod.seed_all(args.seed)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    times = {}
    load = {"start": [round(x, 1) for x in os.getloadavg()]}
    t0 = time.time()

    # Pairs and documents.
    sources = [s for s in args.sources.split(",") if s]
    pairs, stats = pairs_mod.build_pairs(
        data, args.shortlist, out / "docs", args.seed, sources, args.per_source
    )
    if args.apisguru_pairs:
        # Pairs of one request stay together (the list is in request order).
        keep = {p.query for p in pairs if p.source == "apisguru"}
        keep = set(sorted(keep, key=lambda q: docvecs.text_sha(q))[: args.apisguru_pairs])
        pairs = [p for p in pairs if p.source != "apisguru" or p.query in keep]
        if "apisguru" in stats:
            stats["apisguru"]["pairs"] = sum(p.source == "apisguru" for p in pairs)
    docs = {s: pairs_mod.dump_docs(args.shortlist, data / s, out / "docs") for s in sources}
    whole = {s for s in sources if args.candidates == "catalog" and len(docs[s]) <= args.catalog_max}
    cands = Candidates()
    for s in sorted(whole):
        for key, d in docs[s].items():
            cands.add(s, d["text"], key)
    rows = []
    for p in pairs:
        pos = cands.add(p.source, p.positive, None)
        for g in p.gold:
            cands.add(p.source, docs[p.source][g]["text"], g)
        # The positive is a text of the pair's gold endpoint.
        for g in p.gold:
            if p.positive in (docs[p.source][g]["text"], *docs[p.source][g].get("masked", {}).values()):
                cands.of_endpoint.setdefault((p.source, g), set()).add(pos)
        cands.add(p.source, p.negative, None)
        rows.append(pos)
    val = Validation(data, sorted(whole), docs, cands) if whole else None
    forbid = [sorted(cands.of_gold(p.source, p.gold) - {pos}) for p, pos in zip(pairs, rows)]
    times["pairs_seconds"] = round(time.time() - t0, 1)
    log(f"{len(pairs)} pairs, {len(cands.texts)} candidate documents {json.dumps(stats)}")

    template = export_onnx.template_path()
    doc_model = Path(args.doc_model) if args.doc_model else template
    base_dir = train_mod.base_model_dir()
    tok = base_dir / "tokenizer.json"
    threads = args.threads or torch.get_num_threads()
    doc_enc = docvecs.OnnxEncoder(doc_model, tok, 256, threads)
    t = time.time()
    dvecs, cache_stats = docvecs.cached_vectors(doc_enc, cands.texts, out / "cache", log)
    times["doc_vectors_seconds"] = round(time.time() - t, 1)
    dvecs_t = torch.from_numpy(dvecs)
    src_names = sorted(set(sources))
    cand_src = torch.tensor([src_names.index(s) for s in cands.sources])
    requests = Requests(pairs, rows, forbid, src_names)

    # The base model's request vectors (the shipped int8 model, as `shortlist` embeds them).
    t = time.time()
    q_enc = docvecs.OnnxEncoder(template, tok, args.query_tokens, threads)
    queries = [it[0] for it in requests.items]
    qpooled = torch.from_numpy(q_enc.pooled(queries))
    qtokens = [min(args.query_tokens, len(q_enc.tokenizer.encode(q).ids)) for q in queries]
    val_pooled = q_enc.pooled(val.queries()) if val else None
    times["query_vectors_seconds"] = round(time.time() - t, 1)
    report = {"validation_r10": {}}
    if val:
        report["validation_r10"]["base"] = val.score(docvecs.normalise(val_pooled), dvecs)
        log(f"validation R@10, base: {report['validation_r10']['base']}")

    # The linear map.
    t = time.time()
    dim = dvecs.shape[1]
    W = torch.nn.Parameter(torch.eye(dim))
    opt = torch.optim.AdamW([W], lr=args.linear_lr, weight_decay=0.0)
    bs = 256
    n_batches = math.ceil(len(queries) / bs)
    steps = max(1, int(n_batches * args.linear_epochs))
    rng = random.Random(args.seed)
    eye = torch.eye(dim)
    step = 0
    while step < steps:
        order = list(range(len(queries)))
        rng.shuffle(order)
        for s in range(0, len(order), bs):
            if step >= steps:
                break
            idx = order[s : s + bs]
            q = torch.nn.functional.normalize(qpooled[idx] @ W.T, dim=-1)
            loss = requests.loss(q, idx, dvecs_t, cand_src, args.scale)
            loss = loss + args.linear_decay * ((W - eye) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        log(f"linear map: step {step}/{steps} loss {loss.item():.4f}")
    Wn = W.detach().numpy().astype(np.float32)
    times["linear_seconds"] = round(time.time() - t, 1)
    if val:
        report["validation_r10"]["linear"] = val.score(docvecs.normalise(val_pooled @ Wn.T), dvecs)
        log(f"validation R@10, linear map: {report['validation_r10']['linear']}")
    lin_dir = out / "linear-model"
    report["linear_model_sha256"] = export_onnx.export_linear(Wn, base_dir, lin_dir)
    log(f"model folder: {lin_dir}")

    # The query encoder.
    if not args.skip_encoder:
        from sentence_transformers import SentenceTransformer
        from transformers import get_linear_schedule_with_warmup

        model = SentenceTransformer(str(base_dir), device="cpu")
        base = SentenceTransformer(str(base_dir), device="cpu")
        model.max_seq_length = args.query_tokens
        batches = requests.batches(args.batch_size, qtokens, args.seed)
        steps = max(1, math.ceil(len(batches) * args.epochs))
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        sched = get_linear_schedule_with_warmup(opt, int(args.warmup * steps), steps)
        model.train()
        t = time.time()
        loss_log, step, epoch = [], 0, 0

        def stopped():
            return args.max_minutes is not None and time.time() - t > 60 * args.max_minutes

        while step < steps and not stopped():
            order = list(range(len(batches)))
            random.Random(args.seed + epoch).shuffle(order)
            for bi in order:
                if step >= steps or stopped():
                    break
                idx = batches[bi]
                f = model.preprocess([queries[i] for i in idx])
                q = torch.nn.functional.normalize(model(f)["sentence_embedding"], dim=-1)
                loss = requests.loss(q, idx, dvecs_t, cand_src, args.scale)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad()
                step += 1
                if step % 20 == 0 or step == steps:
                    el = time.time() - t
                    log(f"encoder: step {step}/{steps} loss {loss.item():.4f} {el:.0f}s")
                    loss_log.append({"step": step, "loss": round(loss.item(), 4), "seconds": round(el, 1)})
            epoch += 1
        times["encoder_seconds"] = round(time.time() - t, 1)
        report["encoder_steps"] = {"planned": steps, "done": step, "batches": len(batches)}
        report["loss_log"] = loss_log
        model.eval()
        bert = model[0].auto_model
        enc_dir = out / "query-model"
        t = time.time()
        report["query_model_sha256"] = export_onnx.export(bert, base[0].auto_model, base_dir, enc_dir)
        report["int8_vs_fp32_min_cosine"] = round(
            export_onnx.compare(bert, model[0].tokenizer, enc_dir, queries[:16]), 5
        )
        times["export_seconds"] = round(time.time() - t, 1)
        if val:
            enc = docvecs.OnnxEncoder(enc_dir / "model.onnx", tok, args.query_tokens, threads)
            report["validation_r10"]["encoder"] = val.score(enc.embed(val.queries()), dvecs)
            log(f"validation R@10, query encoder: {report['validation_r10']['encoder']}")
        log(f"model folder: {enc_dir}")

    times["total_seconds"] = round(time.time() - t0, 1)
    load["end"] = [round(x, 1) for x in os.getloadavg()]
    card = {
        "recipe": "query-side (document vectors cached)",
        "pairs": len(pairs),
        "requests": len(queries),
        "candidates": len(cands.texts),
        "whole_catalogs": sorted(whole),
        "per_source": stats,
        "doc_model_sha256": doc_enc.digest,
        "doc_vectors": cache_stats,
        **report,
        "times": times,
        "load_average": load,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "args": {k: v for k, v in vars(args).items() if k != "shortlist"},
        "data_manifest_sha256": export_onnx.sha256(HERE / "data-manifest.sha256"),
        "versions": {"torch": torch.__version__},
    }
    (out / "run.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps({k: card.get(k) for k in ("pairs", "validation_r10", "times",
                                                "linear_model_sha256", "query_model_sha256")}))


if __name__ == "__main__":
    main()
