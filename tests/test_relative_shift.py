"""DeBERTa's relative attention as a diagonal shift (the `relative_shift` export): the same
scores as transformers' gather, in PyTorch and exported, at lengths the export never saw."""

import numpy as np
import pytest
import torch
from rmbench.export import export_onnx, ort_session
from rmbench.families import family
from rmbench.relative_shift import patched
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification


def tiny_deberta(**overrides) -> DebertaV2ForSequenceClassification:
    """The project's DeBERTa-v3 architecture, small enough to test in seconds, with few position
    buckets so that short rows already reach the log-bucketed and the clamped distances."""
    values = {k: v for k, v in family("deberta-v3-large")["config"].items() if k != "model_type"}
    values |= {
        "vocab_size": 100,
        "hidden_size": 32,
        "pooler_hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
        "position_buckets": 8,
    }
    torch.manual_seed(0)
    return DebertaV2ForSequenceClassification(DebertaV2Config(**(values | overrides))).eval()


def padded_batch(lengths: list[int], seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    longest = max(lengths)
    ids = torch.randint(5, 100, (len(lengths), longest), generator=generator)
    mask = (torch.arange(longest)[None, :] < torch.tensor(lengths)[:, None]).long()
    return {"input_ids": ids * mask, "attention_mask": mask}


def logits(model, batch) -> np.ndarray:
    with torch.inference_mode():
        return model(**batch).logits[:, 0].numpy()


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # DeBERTa-v3: shared keys, log buckets
        {"share_att_key": False},  # separate position projections
        {"position_buckets": -1, "max_relative_positions": 24},  # no buckets: plain clamped distances
        {"pos_att_type": ["c2p"]},  # one direction only
    ],
)
def test_the_shift_scores_like_transformers_gather(overrides):
    model = tiny_deberta(**overrides)
    for lengths in ([2], [3], [7], [40], [64], [9, 33, 2, 17]):  # alone and padded together
        batch = padded_batch(lengths)
        stock = logits(model, batch)
        with patched():
            shifted = logits(model, batch)
        assert np.allclose(shifted, stock, rtol=0, atol=1e-5), (lengths, shifted - stock)
    assert np.ptp(stock) > 1e-3  # the last batch's rows score apart: the comparison has something to see


def test_patched_restores_transformers_method_even_after_an_error():
    from transformers.models.deberta_v2 import modeling_deberta_v2

    original = modeling_deberta_v2.DisentangledSelfAttention.disentangled_attention_bias
    with pytest.raises(RuntimeError), patched():
        assert modeling_deberta_v2.DisentangledSelfAttention.disentangled_attention_bias is not original
        raise RuntimeError("export failed")
    assert modeling_deberta_v2.DisentangledSelfAttention.disentangled_attention_bias is original


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("relshift")
    tiny_deberta().save_pretrained(root / "model")
    for attention in ("stock", "relative_shift"):
        export_onnx(root / "model", root / attention / "model.onnx", opset=17, attention=attention)
    return root


def operator_types(onnx_path) -> set[str]:
    import onnx

    return {node.op_type for node in onnx.load(str(onnx_path), load_external_data=False).graph.node}


def test_exported_shift_has_no_attention_sized_index_and_scores_at_every_length(exports):
    model = DebertaV2ForSequenceClassification.from_pretrained(exports / "model").eval()
    assert "GatherElements" in operator_types(exports / "stock" / "model.onnx")
    assert "GatherElements" not in operator_types(exports / "relative_shift" / "model.onnx")
    session = ort_session(exports / "relative_shift" / "model.onnx", threads=1)
    for lengths in ([2], [5], [31], [64], [12, 50, 3]):  # the trace kept L symbolic: any length runs
        batch = padded_batch(lengths, seed=len(lengths))
        feed = {k: v.numpy() for k, v in batch.items()}
        assert np.allclose(session.run(None, feed)[0][:, 0], logits(model, batch), rtol=0, atol=1e-4), lengths


def test_an_unknown_attention_export_is_refused(tmp_path):
    with pytest.raises(ValueError, match="stock, relative_shift"):
        export_onnx(tmp_path, tmp_path / "m.onnx", opset=17, attention="fused")
