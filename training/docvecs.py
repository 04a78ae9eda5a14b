"""Document vectors computed once by the document model, as the index computes them.

The query-side recipe (training/train_query.py) keeps the document model frozen: every
document is embedded once by the int8 model the index uses (ONNX Runtime on the CPU, mean
pooling over the attention mask, L2-normalised, 256 tokens: what `shortlist index` does), and
the vectors are cached by text, so a second run embeds nothing it has seen.
"""

import hashlib
import time
from pathlib import Path

import numpy as np

# Texts per ONNX Runtime call: the index embeds in batches of 8, sorted by length here so
# that a batch is padded little.
BATCH = 16


def text_sha(text):
    return hashlib.sha1(text.encode()).hexdigest()


class OnnxEncoder:
    """An ONNX model and its tokenizer, run as `shortlist` runs them."""

    def __init__(self, model_onnx, tokenizer_json, max_tokens=256, threads=None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        self.session = ort.InferenceSession(
            str(model_onnx), opts, providers=["CPUExecutionProvider"]
        )
        self.tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.digest = sha256_file(model_onnx)

    def pooled(self, texts):
        """Mean-pooled, not normalised (a linear map on the pooled vector is trained on
        these)."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        rows = [None] * len(texts)
        for s in range(0, len(order), BATCH):
            idx = order[s : s + BATCH]
            enc = self.tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            (hidden,) = self.session.run(None, feeds)
            m = mask[..., None].astype(np.float32)
            v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            for j, i in enumerate(idx):
                rows[i] = v[j]
        if not rows:
            dim = self.session.get_outputs()[0].shape[-1]
            return np.zeros((0, dim if isinstance(dim, int) else 0), np.float32)
        return np.stack(rows).astype(np.float32)

    def embed(self, texts):
        return normalise(self.pooled(texts))


def normalise(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, 1e-12)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_vectors(encoder, texts, cache_dir, log=print):
    """{text sha1: row} and the matrix of normalised vectors for `texts` (distinct), from
    the cache of this document model where present; the rest is embedded and added."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"docvecs-{encoder.digest[:12]}.npz"
    known_keys, known = [], np.zeros((0, 0), dtype=np.float32)
    if path.exists():
        z = np.load(path)
        known_keys, known = list(z["keys"]), z["vectors"]
    where = {k: i for i, k in enumerate(known_keys)}
    missing = sorted({t for t in texts if text_sha(t) not in where}, key=len)
    seconds = 0.0
    if missing:
        log(f"embedding {len(missing)} document text(s) with {path.name} ...")
        t0 = time.time()
        parts = []
        step = 2048
        for s in range(0, len(missing), step):
            parts.append(encoder.embed(missing[s : s + step]))
            log(f"  {min(s + step, len(missing))}/{len(missing)} {time.time() - t0:.0f}s")
        seconds = time.time() - t0
        new = np.concatenate(parts).astype(np.float32)
        known = new if known.size == 0 else np.concatenate([known, new])
        known_keys = known_keys + [text_sha(t) for t in missing]
        where = {k: i for i, k in enumerate(known_keys)}
        tmp = path.with_suffix(".part.npz")
        np.savez(tmp, keys=np.array(known_keys), vectors=known)
        tmp.replace(path)
    rows = np.array([where[text_sha(t)] for t in texts], dtype=np.int64)
    return known[rows], {"embedded": len(missing), "cached": len(texts) - len(missing),
                         "seconds": round(seconds, 1), "cache": str(path)}
