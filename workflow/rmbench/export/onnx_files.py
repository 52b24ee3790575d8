"""The ONNX files of one model, by name: which exports exist, which MatMuls an int8 copy
quantizes, and the path a cell loads. A leaf module: the runtimes' declarations, the rules, the
export and the quantizer all read it, and it imports nothing of theirs.
"""

from __future__ import annotations

from rmbench.errors import RmbenchError

# How DeBERTa's relative attention is exported: as transformers writes it, as a diagonal shift
# in ONNX's own operators, with the shift and sum as the native engine's operator
# rmbench.DisentangledBias, or with that operator and the rest of the attention as ONNX Runtime's
# MultiHeadAttention (relative_shift.py; models without relative attention export the same graph
# every way).
ATTENTION_EXPORTS = ("stock", "relative_shift", "disentangled_bias", "multihead_attention")
# Exports that call the native engine's own operators: only ONNX Runtime sessions that register
# its operator library load them (the engine itself; ORT-Python, the gates and the profiles given
# the library). OpenVINO cannot.
NATIVE_OPERATOR_EXPORTS = ("disentangled_bias", "multihead_attention")

# Which MatMuls an int8 file quantizes: every one with a constant weight, or parts of each layer
# joined by '-': the attention projections, the feed-forward's input MatMuls (up, and gate where
# SwiGLU has one) and its output MatMul; `ffn` is both feed-forward parts. Each family declares its
# parts by substrings of the exporter's node names (rmbench.models.families' `matmul_parts`); a node
# belongs to the first part, in MATMUL_PARTS' order, that one of its substrings matches.
MATMUL_PARTS = ("attention", "ffn_in", "ffn_out")
MATMUL_GROUPS = ("all", "ffn", "attention", "ffn_in", "ffn_out", "attention-ffn_in", "attention-ffn_out")


# The exports of one model: `optimizer: transformers` loads the file after
# onnxruntime.transformers' fusions (rule optimize_onnx), `optimizer: relative_shift`,
# `disentangled_bias` or `multihead_attention` another attention export (rules
# export_onnx_<export>, one script). What each runtime takes is its own declaration
# (Runtime.settings).
OPTIMIZER_SUFFIX = {
    "none": "",
    "transformers": ".opt",
    "relative_shift": ".relshift",
    "disentangled_bias": ".dbias",
    "multihead_attention": ".mha",
}
ONNX_OPTIMIZERS = tuple(OPTIMIZER_SUFFIX)
# The engine's operators have CPU kernels only: a CUDA cell of such an export loads this one
# instead, the same graph in ONNX's own operators (its runtime records the file it loaded).
CUDA_EXPORT = {"disentangled_bias": "relative_shift", "multihead_attention": "relative_shift"}
# What OpenVINO loads: all but the exports that call the native engine's operators.
PORTABLE_OPTIMIZERS = tuple(o for o in ONNX_OPTIMIZERS if o not in NATIVE_OPERATOR_EXPORTS)


def device_export(optimizer: str, device: str) -> str:
    """The export a cell of this optimizer loads on this device (CUDA_EXPORT)."""
    return CUDA_EXPORT.get(optimizer, optimizer) if device == "cuda" else optimizer


def onnx_file(
    model: str, precision: str = "fp32", optimizer: str = "none", matmuls: str | None = None
) -> str:
    """The ONNX file a cell loads: the export, its int8 copy (`quantization`'s settings, or those
    with another group of MatMuls: model.int8.<matmuls>.onnx), its transformers-optimized copy, or
    the relative-shift export."""
    if precision not in ("fp32", "int8") or optimizer not in ONNX_OPTIMIZERS:
        raise RmbenchError(f"no ONNX file for precision {precision} with optimizer {optimizer}")
    if precision == "int8" and optimizer != "none":
        raise RmbenchError(f"int8 of the {optimizer} file is not built (quantize the export instead)")
    if matmuls is not None and precision != "int8":
        raise RmbenchError(f"matmuls={matmuls} chooses what int8 quantizes; this file is {precision}")
    suffix = {"int8": ".int8", "fp32": ""}[precision] + OPTIMIZER_SUFFIX[optimizer]
    return f"results/onnx/{model}/model{suffix}{'' if matmuls is None else '.' + matmuls}.onnx"
