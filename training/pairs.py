"""Training pairs from the retrieval corpus: (query, positive document, hard negative).

Documents are the product's own doc texts, printed by `shortlist doc-texts` for each source's
catalog, so the model is trained on exactly the text the index embeds. Queries taken from an
endpoint's own documentation (`mask` in apisguru/) are paired with the doc text that leaves
that text out; documents used as negatives stay complete.
"""

import hashlib
import json
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SOURCES = ["apisguru", "bfcl", "metatool", "seal_tools", "sgd"]

# What the shipped model is trained on: every source but sgd/, whose CC BY-SA 4.0 licence
# would bind the model's licence (training/README.md, "Licence").
DEFAULT_SOURCES = ["apisguru", "bfcl", "metatool", "seal_tools"]

# At most this many training queries per gold endpoint (tool, intent) and source, so that
# no source or tool dominates: metatool has 7,536 queries over 199 tools, sgd 6,648 over 88
# intents. None: no cap.
PER_TOOL_CAP = {"metatool": 12, "sgd": 40, "bfcl": 8, "seal_tools": 8, "apisguru": 4}

# Of a query with several gold endpoints, at most this many become pairs (one gold each).
GOLD_PER_QUERY = 3


@dataclass
class Pair:
    query: str
    positive: str
    negative: str
    source: str
    # Everything that must not meet another pair of the same batch: the query's text, its
    # gold endpoints, the positive's and negative's texts and keys. With in-batch negatives
    # a second pair holding one of these would count a right answer as a wrong one.
    keys: set = field(default_factory=set)
    # Every gold endpoint of the query (not only this pair's): none of them is a negative.
    gold: list = field(default_factory=list)


def norm_query(text):
    return " ".join(text.lower().split())


def text_key(text):
    return "t:" + hashlib.sha1(text.encode()).hexdigest()


def dump_docs(shortlist, source_dir, cache_dir):
    """{endpoint key: {"text": ..., "masked": {...}}} for one source, cached per source."""
    cache = Path(cache_dir) / f"{source_dir.name}.docs.jsonl"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".part")
        with open(tmp, "w") as out:
            subprocess.run(
                [str(shortlist), "doc-texts", "--masks", str(source_dir / "specs")],
                stdout=out,
                check=True,
            )
        tmp.replace(cache)
    docs = {}
    with open(cache) as f:
        for line in f:
            row = json.loads(line)
            docs[row["key"]] = row
    return docs


def read_queries(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def build_pairs(data_dir, shortlist, cache_dir, seed, sources=SOURCES, per_source=None):
    """Pairs of every source, capped per tool; `per_source` also caps each source (sample)."""
    rng = random.Random(seed)
    data_dir = Path(data_dir)
    pairs = []
    stats = {}
    for source in sources:
        sdir = data_dir / source
        docs = dump_docs(shortlist, sdir, cache_dir)
        by_api = {}
        for key in docs:
            by_api.setdefault(key.split(" ", 1)[0], []).append(key)
        all_keys = sorted(docs)
        queries = read_queries(sdir / "queries.jsonl")
        rng.shuffle(queries)
        cap = PER_TOOL_CAP.get(source)
        per_tool = {}
        made = []
        missing = 0
        for q in queries:
            gold = [g for g in q["gold"] if g in docs]
            missing += len(q["gold"]) - len(gold)
            if not gold:
                continue
            gold_texts = {docs[g]["text"] for g in gold}
            chosen = gold if len(gold) <= GOLD_PER_QUERY else rng.sample(gold, GOLD_PER_QUERY)
            for g in chosen:
                if cap is not None and per_tool.get(g, 0) >= cap:
                    continue
                per_tool[g] = per_tool.get(g, 0) + 1
                mask = q.get("mask")
                positive = docs[g]["masked"][mask] if mask else docs[g]["text"]
                neg = hard_negative(rng, g, gold, gold_texts, docs, by_api, all_keys)
                if neg is None:
                    continue
                negative = docs[neg]["text"]
                keys = {"q:" + norm_query(q["query"]), text_key(positive), text_key(negative), neg}
                keys.update(gold)
                keys.update(text_key(t) for t in gold_texts)
                made.append(Pair(q["query"], positive, negative, source, keys, list(gold)))
        if per_source is not None:
            made = made[:per_source]
        stats[source] = {"pairs": len(made), "gold_not_found": missing}
        pairs.extend(made)
    return pairs, stats


def hard_negative(rng, g, gold, gold_texts, docs, by_api, all_keys):
    """Another endpoint of the same API when it has one (the hardest to tell apart: same
    vocabulary, another operation), else of the same source's catalog; never a gold
    endpoint nor one whose text equals a gold's (the same function offered in several
    specs)."""
    api = g.split(" ", 1)[0]
    for pool in (by_api.get(api, []), all_keys):
        for _ in range(20):
            k = rng.choice(pool)
            if k not in gold and docs[k]["text"] not in gold_texts:
                return k
    return None


def batches(pairs, batch_size, seed, open_max=32):
    """Shuffled batches in which no two pairs share a query, gold endpoint or document text.
    Pairs that fit no open batch wait for a later one; the last partial batches are kept."""
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    out, open_batches = [], []
    for i in order:
        p = pairs[i]
        for b in open_batches:
            if not (b[1] & p.keys):
                b[0].append(p)
                b[1].update(p.keys)
                if len(b[0]) == batch_size:
                    out.append(b[0])
                    open_batches.remove(b)
                break
        else:
            if len(open_batches) >= open_max:
                out.append(open_batches.pop(0)[0])
            open_batches.append(([p], set(p.keys)))
    out.extend(b[0] for b in open_batches if len(b[0]) > 1)
    return out


def check_batch(batch):
    """True when no key is shared by two pairs of the batch."""
    seen = set()
    for p in batch:
        if seen & p.keys:
            return False
        seen |= p.keys
    return True


