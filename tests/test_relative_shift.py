"""DeBERTa's relative attention as a diagonal shift (the `relative_shift` export), as the
native engine's operator (`disentangled_bias`), and with the rest of the attention as ONNX
Runtime's MultiHeadAttention (`multihead_attention`): the same scores as transformers' gather, in
PyTorch and exported, at lengths the export never saw; the operator itself against its formula."""

import numpy as np
import pytest
import torch
from rmbench.errors import RmbenchError
from rmbench.export.onnx import export_onnx, ort_session
from rmbench.export.onnx_files import ATTENTION_EXPORTS, NATIVE_OPERATOR_EXPORTS
from rmbench.export.relative_shift import REWRITES, patched
from rmbench.models.families import family
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
        for export in REWRITES:
            with patched(export):
                shifted = logits(model, batch)
            assert np.allclose(shifted, stock, rtol=0, atol=1e-5), (lengths, export, shifted - stock)
    assert np.ptp(stock) > 1e-3  # the last batch's rows score apart: the comparison has something to see


def test_patched_restores_transformers_methods_even_after_an_error():
    from transformers.models.deberta_v2 import modeling_deberta_v2

    attention = modeling_deberta_v2.DisentangledSelfAttention
    bias, forward = attention.disentangled_attention_bias, attention.forward
    with pytest.raises(RuntimeError), patched("multihead_attention"):
        assert attention.disentangled_attention_bias is not bias and attention.forward is not forward
        raise RuntimeError("export failed")
    assert attention.disentangled_attention_bias is bias and attention.forward is forward
    assert not hasattr(attention, "_as_one_operator") and not hasattr(attention, "_transformers_forward")


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("relshift")
    tiny_deberta().save_pretrained(root / "model")
    for attention in ATTENTION_EXPORTS:
        export_onnx(root / "model", root / attention / "model.onnx", opset=17, attention=attention)
    return root


def operator_types(onnx_path) -> list[str]:
    import onnx

    return [node.op_type for node in onnx.load(str(onnx_path), load_external_data=False).graph.node]


def test_exported_shift_has_no_attention_sized_index_and_scores_at_every_length(exports):
    model = DebertaV2ForSequenceClassification.from_pretrained(exports / "model").eval()
    assert "GatherElements" in operator_types(exports / "stock" / "model.onnx")
    assert "GatherElements" not in operator_types(exports / "relative_shift" / "model.onnx")
    session = ort_session(exports / "relative_shift" / "model.onnx", threads=1)
    for lengths in ([2], [5], [31], [64], [12, 50, 3]):  # the trace kept L symbolic: any length runs
        batch = padded_batch(lengths, seed=len(lengths))
        feed = {k: v.numpy() for k, v in batch.items()}
        assert np.allclose(session.run(None, feed)[0][:, 0], logits(model, batch), rtol=0, atol=1e-4), lengths


@pytest.mark.parametrize("export", NATIVE_OPERATOR_EXPORTS)
def test_the_operator_exports_score_like_pytorch_with_the_engines_library_and_are_refused_without(
    exports, binary, export
):
    path = exports / export / "model.onnx"
    ops = operator_types(path)
    assert ops.count("DisentangledBias") == 2  # one per layer, in place of the shift's copies
    assert ops.count("Slice") < operator_types(exports / "relative_shift" / "model.onnx").count("Slice")
    if export == "multihead_attention":  # scores, mask, softmax and the values' sum: one node a layer
        assert ops.count("MultiHeadAttention") == 2 and "Softmax" not in ops
    model = DebertaV2ForSequenceClassification.from_pretrained(exports / "model").eval()
    session = ort_session(path, threads=2, operators=binary.parent / "librmbench_ops.so")
    for lengths in ([2], [5], [31], [64], [12, 50, 3]):
        batch = padded_batch(lengths, seed=len(lengths))
        feed = {k: v.numpy() for k, v in batch.items()}
        assert np.allclose(session.run(None, feed)[0][:, 0], logits(model, batch), rtol=0, atol=1e-4), lengths
    with pytest.raises(RmbenchError, match="librmbench_ops.so"):
        ort_session(path, threads=1)


def one_operator_session(library):
    """rmbench.DisentangledBias alone, on inputs of any [N, L, W]."""
    from onnx import TensorProto, helper

    def tensor(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["n", "l", None])

    node = helper.make_node("DisentangledBias", ["c2p", "p2c"], ["bias"], domain="rmbench")
    graph = helper.make_graph([node], "bias", [tensor("c2p"), tensor("p2c")], [tensor("bias")])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("rmbench", 1)], ir_version=8
    )
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.register_custom_ops_library(str(library))
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("matrices,length", [(1, 1), (1, 2), (3, 3), (5, 16), (2, 17), (7, 40), (16, 158)])
def test_the_operator_adds_both_diagonal_shifts_as_its_formula_says(binary, matrices, length):
    """bias[n, i, j] = c2p[n, i, L-1-i+j] + p2c[n, j, L-1-j+i], written out element by element,
    across tile edges (16) and with more matrices than threads."""
    rng = np.random.default_rng(length)
    c2p, p2c = (rng.standard_normal((matrices, length, 2 * length - 1)).astype(np.float32) for _ in range(2))
    (bias,) = one_operator_session(binary.parent / "librmbench_ops.so").run(None, {"c2p": c2p, "p2c": p2c})
    expected = np.empty((matrices, length, length), np.float32)
    for i in range(length):
        for j in range(length):
            expected[:, i, j] = c2p[:, i, length - 1 - i + j] + p2c[:, j, length - 1 - j + i]
    assert bias.shape == expected.shape
    assert np.array_equal(bias, expected)  # one float add per element: exactly


def test_the_operator_refuses_inputs_that_are_not_two_distance_tables(binary):
    session = one_operator_session(binary.parent / "librmbench_ops.so")
    table = np.zeros((2, 4, 7), np.float32)
    with pytest.raises(Exception, match=r"\[N, L, 2L-1\]"):
        session.run(None, {"c2p": np.zeros((2, 4, 6), np.float32), "p2c": np.zeros((2, 4, 6), np.float32)})
    with pytest.raises(Exception, match=r"\[N, L, 2L-1\]"):
        session.run(None, {"c2p": table, "p2c": np.zeros((2, 5, 9), np.float32)})


def test_an_unknown_attention_export_is_refused(tmp_path):
    with pytest.raises(ValueError, match="stock, relative_shift, disentangled_bias"):
        export_onnx(tmp_path, tmp_path / "m.onnx", opset=17, attention="fused")
