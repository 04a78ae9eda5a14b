"""The shipped model with integer matrix products: ONNX Runtime's dynamic quantisation.

    training/.venv/bin/python training/quantize_dynamic.py OUT_DIR

The shipped model stores int8 weights but computes in fp32: each weight is turned back into
floats in the graph (Cast + Mul) before its MatMul. Here the matrix weights are folded to
the floats the shipped graph computes, and ONNX Runtime's `quantize_dynamic` rewrites every
MatMul as an integer product (int8 weights, one scale per output channel; activations
quantised to uint8 per call: DynamicQuantizeLinear + MatMulInteger). The embedding tables
keep the shipped form. OUT_DIR gets model.onnx and the tokenizer files: a model folder for
`shortlist --model-dir`. Its vectors differ from the shipped model's, so an index built with
one is rebuilt once with the other (the model id fingerprints the files).
"""

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).parent))
import export_onnx  # noqa: E402
import train  # noqa: E402


def fold_matmul_weights(model):
    """The graph with every dequantised MatMul weight (Cast(int8) * scale, feeding a MatMul)
    replaced by its fp32 value."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producers = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    drop_nodes, drop_inits, new_inits = [], set(), []
    for mul in [n for n in g.node if n.op_type == "Mul"]:
        if not all(c.op_type == "MatMul" for c in consumers.get(mul.output[0], [])):
            continue
        cast = producers.get(mul.input[0])
        scale = mul.input[1]
        if cast is None or cast.op_type != "Cast" or scale not in inits:
            continue
        q = cast.input[0]
        if q not in inits or inits[q].data_type != onnx.TensorProto.INT8:
            continue
        w = numpy_helper.to_array(inits[q]).astype(np.float32) * numpy_helper.to_array(inits[scale])
        new_inits.append(numpy_helper.from_array(w.astype(np.float32), mul.output[0]))
        drop_nodes += [cast, mul]
        drop_inits |= {q, scale}
    for n in drop_nodes:
        g.node.remove(n)
    kept = [t for t in g.initializer if t.name not in drop_inits]
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    return model, len(new_inits)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, folded = fold_matmul_weights(onnx.load(str(export_onnx.template_path())))
    if folded != 36:
        raise SystemExit(f"folded {folded} MatMul weights, expected 36 (6 layers x 6)")
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(model, str(fp32))
        quantize_dynamic(
            str(fp32),
            str(out / "model.onnx"),
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            weight_type=QuantType.QInt8,
            # Only products with a weight; attention's activation products stay fp32.
            extra_options={"MatMulConstBOnly": True},
        )
    base = train.base_model_dir()
    for f in export_onnx.TOKENIZER_FILES:
        (out / f).write_bytes((base / f).read_bytes())
    ops = sorted({n.op_type for n in onnx.load(str(out / "model.onnx")).graph.node})
    print(f"{out / 'model.onnx'}: sha256 {export_onnx.sha256(out / 'model.onnx')}, operators {ops}")


if __name__ == "__main__":
    main()
