"""Checks of the training pipeline's parts that need no training:

    training/.venv/bin/python -m unittest discover -s training -p 'test_*.py'
"""

import os
import random
import sys
import tempfile
import unittest
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

import export_onnx  # noqa: E402
import pairs  # noqa: E402


def pair(query, gold, pos, neg):
    keys = {"q:" + pairs.norm_query(query), gold, neg, pairs.text_key(pos), pairs.text_key(neg)}
    return pairs.Pair(query, pos, neg, "s", keys)


class Batches(unittest.TestCase):
    def test_no_batch_holds_a_query_or_endpoint_twice(self):
        rng = random.Random(1)
        ps = []
        for i in range(400):
            g = f"api GET /t{rng.randrange(30)}"
            n = f"api GET /t{rng.randrange(30)}"
            ps.append(pair(f"query {rng.randrange(200)}", g, "doc " + g, "doc " + n))
        bs = pairs.batches(ps, 8, seed=3)
        self.assertTrue(all(pairs.check_batch(b) for b in bs))
        self.assertGreater(sum(len(b) for b in bs), 300, "most pairs find a batch")
        self.assertTrue(any(len(b) == 8 for b in bs))
        # The same seed gives the same batches.
        again = pairs.batches(ps, 8, seed=3)
        self.assertEqual([[p.query for p in b] for b in bs], [[p.query for p in b] for b in again])

    def test_check_batch_sees_a_shared_gold(self):
        a = pair("one", "api GET /a", "doc a", "doc b")
        b = pair("two", "api GET /a", "doc a", "doc c")
        self.assertFalse(pairs.check_batch([a, b]))
        c = pair("ONE ", "api GET /c", "doc c2", "doc d")
        self.assertFalse(pairs.check_batch([a, c]), "equal queries up to case and spaces")


class Export(unittest.TestCase):
    def test_base_weights_reproduce_the_shipped_model(self):
        """The export's mapping and quantisation, end to end: the base model's weights give
        the shipped int8 model.onnx byte for byte."""
        from sentence_transformers import SentenceTransformer

        import train

        base = train.base_model_dir()
        bert = SentenceTransformer(str(base), device="cpu")[0].auto_model
        with tempfile.TemporaryDirectory() as d:
            sha = export_onnx.export(bert, bert, base, d)
            self.assertEqual(sha, export_onnx.SHIPPED_SHA256)
            for f in export_onnx.TOKENIZER_FILES:
                self.assertTrue((Path(d) / f).is_file())

    def test_quantise_is_symmetric_per_channel(self):
        import numpy as np

        w = np.array([[0.25, -1.0], [0.5, 0.0]], dtype=np.float32)
        q, s = export_onnx.quantise(w, axis=1)
        self.assertEqual(q.tolist(), [[32, -127], [127, 0]])
        np.testing.assert_allclose(q * s, w, atol=float(s.max()) / 2)


class QueryRecipe(unittest.TestCase):
    def test_identity_map_gives_the_shipped_model(self):
        """The linear map is applied in the graph after the last layer: the identity gives
        the shipped model's pooled vectors, another map its image of them."""
        import numpy as np

        import docvecs
        import train

        base = train.base_model_dir()
        texts = ["top rated movies", "add a song to my queue and play it"]
        shipped = docvecs.OnnxEncoder(export_onnx.template_path(), base / "tokenizer.json")
        with tempfile.TemporaryDirectory() as d:
            export_onnx.export_linear(np.eye(384, dtype=np.float32), base, d)
            same = docvecs.OnnxEncoder(Path(d) / "model.onnx", base / "tokenizer.json")
            np.testing.assert_allclose(same.pooled(texts), shipped.pooled(texts), atol=1e-5)
            w = np.random.default_rng(1).normal(size=(384, 384)).astype(np.float32)
            export_onnx.export_linear(w, base, d)
            mapped = docvecs.OnnxEncoder(Path(d) / "model.onnx", base / "tokenizer.json")
            np.testing.assert_allclose(
                mapped.pooled(texts), shipped.pooled(texts) @ w.T, rtol=1e-3, atol=1e-3
            )

    def test_the_loss_never_counts_a_gold_document_or_another_source(self):
        import torch

        import train_query

        q = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=-1)
        docs = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        src = torch.tensor([0, 0, 0, 1])
        # Pair 0: positive 0, doc 1 (same text as another gold) forbidden; pair 1 (source 0):
        # positive 2, doc 3 of another source never counts.
        loss = train_query.batch_loss(
            q, docs, src, torch.tensor([0, 2]), torch.tensor([0, 0]), [[1], []], 20.0
        )
        unmasked = train_query.batch_loss(
            q, docs, torch.zeros(4, dtype=torch.long), torch.tensor([0, 2]),
            torch.tensor([0, 0]), [[], []], 20.0,
        )
        self.assertLess(loss.item(), 1e-3)
        self.assertGreater(unmasked.item(), 0.5)


if __name__ == "__main__":
    unittest.main()
