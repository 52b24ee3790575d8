"""Reduced precision behind a fidelity gate (the decomposition study).

int8: ONNX Runtime's dynamic quantization of the exported model's MatMul weights (activations
are quantized per call; on x86 with AVX512-VNNI, MLAS runs the u8 x s8 kernels). The ORT-Python
runtime and the native engine both load the quantized file. bf16: autocast in the torch runtimes.

A faster variant that changes which reply wins is not faster. The gate scores every row's chosen
and rejected reply with the variant, compares them with fp32 ONNX Runtime's scores of the same
replies (the parity-gated reference engine; scored once per model and set, rule
fp32_pair_scores), and reports per-row |delta score| and the share of (chosen, rejected) pairs
whose preference agrees with fp32; below the configured share the variant is marked failed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .cells import format_params
from .errors import RmbenchError

# Which MatMuls an int8 file quantizes: every one with a constant weight, or parts of each layer
# joined by '-': the attention projections, the feed-forward's input MatMuls (up, and gate where
# SwiGLU has one) and its output MatMul; `ffn` is both feed-forward parts. Each family declares its
# parts by substrings of the exporter's node names (rmbench.families' `matmul_parts`); a node
# belongs to the first part, in MATMUL_PARTS' order, that one of its substrings matches.
MATMUL_PARTS = ("attention", "ffn_in", "ffn_out")
MATMUL_GROUPS = ("all", "ffn", "attention", "ffn_in", "ffn_out", "attention-ffn_in", "attention-ffn_out")


# The exports of one model: `optimizer: transformers` loads the file after
# onnxruntime.transformers' fusions (rule optimize_onnx), `optimizer: relative_shift` the export
# with DeBERTa's relative attention as a diagonal shift (rule export_onnx_relative_shift). What each
# runtime takes is its own declaration (Runtime.settings).
OPTIMIZER_SUFFIX = {"none": "", "transformers": ".opt", "relative_shift": ".relshift"}
ONNX_OPTIMIZERS = tuple(OPTIMIZER_SUFFIX)


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


def timed_settings(config: dict) -> list[dict]:
    """The int8 settings the decomposition study times: `quantization`, with the MatMul group of
    each int8 variant that names its own."""
    study = config["studies"].get("decomposition") or {}
    variants = [v for cfg in study.get("runtimes", {}).values() for v in cfg.get("variants") or []]
    groups = {v.get("matmuls") for v in variants if v.get("precision") == "int8"}
    return [
        config["quantization"] | ({} if group is None else {"matmuls": group})
        for group in sorted(groups, key=str)
    ]


def check_variants(config: dict) -> None:
    """Stops with a clear message when a decomposition variant asks a runtime for something it lacks."""
    study = config["studies"].get("decomposition")
    if not study or not study.get("enabled", True):
        return
    from .runtimes import runtime_class

    for runtime, cfg in study["runtimes"].items():
        allowed = {key: values for key, (values, _) in runtime_class(runtime).settings.items()}
        for variant in cfg.get("variants") or study.get("variants") or [{}]:
            if "matmuls" in variant and variant.get("precision") != "int8":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: matmuls={variant['matmuls']} chooses "
                    "which MatMuls int8 quantizes; give it with precision: int8"
                )
            if variant.get("head", "same") != "same" and variant.get("precision") != "bf16":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: head={variant['head']} keeps the "
                    "reward head out of bf16 autocast; give it with precision: bf16"
                )
            if variant.get("prepack", "on") != "on" and variant.get("freezing") != "on":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: prepack={variant['prepack']} changes "
                    "how Inductor's freezing packs the weights; give it with freezing: on"
                )
            if variant.get("precision") == "int8" and variant.get("optimizer", "none") != "none":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: int8 with optimizer "
                    f"{variant['optimizer']} is not built; use one of them per variant"
                )
            for key, value in variant.items():
                if key not in allowed or str(value) not in allowed[key]:
                    choices = "; ".join(f"{k}: {', '.join(v)}" for k, v in allowed.items())
                    raise RmbenchError(
                        f"studies.decomposition.runtimes.{runtime}: variant {key}={value} is not "
                        f"supported (this runtime takes {choices})"
                    )


def matmul_part(name: str, parts: dict) -> str | None:
    """The part (MATMUL_PARTS) a MatMul node belongs to by its name, or None."""
    return next((part for part in MATMUL_PARTS if any(key in name for key in parts[part])), None)


def matmul_nodes(onnx_path, matmuls: str, parts: dict | None, graph=None) -> list[str] | None:
    """The MatMul nodes of group `matmuls` (None: every one, quantize_dynamic's default) in the
    file's `graph`, read from the file unless given; `parts` is the family's `matmul_parts`."""
    if matmuls not in MATMUL_GROUPS:
        raise RmbenchError(f"matmuls must be one of {', '.join(MATMUL_GROUPS)}, not {matmuls}")
    if matmuls == "all":
        return None
    import onnx

    if parts is None:
        raise RmbenchError(f"matmuls={matmuls} needs the model family's matmul_parts")
    wanted = ("ffn_in-ffn_out" if matmuls == "ffn" else matmuls).split("-")
    if graph is None:
        graph = onnx.load(str(onnx_path), load_external_data=False).graph
    nodes = [n.name for n in graph.node if n.op_type == "MatMul" and matmul_part(n.name, parts) in wanted]
    if not nodes:
        raise RmbenchError(
            f"{onnx_path} has no MatMul named like the {matmuls} group (exported by another tool?)"
        )
    return nodes


def quantize_int8(
    src: Path,
    dst: Path,
    weight_type: str,
    per_channel: bool,
    reduce_range: bool,
    matmuls: str = "all",
    matmul_parts: dict | None = None,
) -> None:
    """Dynamic int8 quantization of the MatMuls with a constant weight (of group `matmuls`)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    types = {"qint8": QuantType.QInt8, "quint8": QuantType.QUInt8}
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    # Given a path, the quantizer writes `<name>-inferred.onnx` beside it and deletes it after: two
    # quantizations of one file at once (snakemake --cores 2) would read each other's half-written
    # copy. Given the model itself, it saves its copy in a temporary folder of its own.
    model = onnx.load(str(src))
    quantize_dynamic(
        model,
        str(dst),
        weight_type=types[weight_type],
        per_channel=per_channel,
        reduce_range=reduce_range,
        op_types_to_quantize=["MatMul"],
        nodes_to_quantize=matmul_nodes(src, matmuls, matmul_parts, model.graph),
        extra_options={"MatMulConstBOnly": True},
    )


def sweep_settings(config: dict) -> dict[str, dict]:
    """The int8 sweep's settings by name (the file name of each gate report): every variant of
    `quantization_sweep` over `quantization`."""
    settings = [config["quantization"] | variant for variant in config["quantization_sweep"]["variants"]]
    names = [format_params({k: str(v).lower() for k, v in sorted(s.items())}) for s in settings]
    if len(set(names)) < len(names):
        raise RmbenchError("quantization_sweep.variants: two variants give the same settings")
    return dict(zip(names, settings))


def preference_fidelity(
    chosen: list[float], rejected: list[float], fp32_chosen: list[float], fp32_rejected: list[float]
) -> dict:
    """Per-row |delta| of the chosen reply's score, and the share of pairs whose preference
    (chosen scores above rejected) is the same as fp32's."""
    chosen, rejected = np.asarray(chosen, float), np.asarray(rejected, float)
    fp32_chosen, fp32_rejected = np.asarray(fp32_chosen, float), np.asarray(fp32_rejected, float)
    delta = np.abs(np.concatenate([chosen - fp32_chosen, rejected - fp32_rejected]))
    agree = (chosen > rejected) == (fp32_chosen > fp32_rejected)
    margin = np.abs(fp32_chosen - fp32_rejected)
    return {
        "pairs": len(chosen),
        "max_abs_delta": float(delta.max()),
        "mean_abs_delta": float(delta.mean()),
        "preference_agreement": float(agree.mean()),
        "flipped": int((~agree).sum()),
        # how close the flipped pairs were in fp32 (small margins flip first)
        "flipped_max_fp32_margin": float(margin[~agree].max()) if (~agree).any() else 0.0,
        "fp32_median_margin": float(np.median(margin)),
    }


def pair_scores(runtime, rows: list[dict]) -> dict:
    """Every row's chosen and rejected reply scored alone by a loaded runtime."""
    missing = [r["id"] for r in rows if "rejected" not in r]
    if missing:
        raise RmbenchError(f"rows {missing[:3]} have no 'rejected' reply: rebuild the sample set")
    score = lambda side: runtime.time_rows_alone([(r["prompt"], r[side]) for r in rows], 0)["scores"]
    return {"ids": [r["id"] for r in rows], "chosen": score("response"), "rejected": score("rejected")}


def loaded(runtime, work):
    """work(runtime) with the runtime loaded, closed afterwards also on failure."""
    try:
        runtime.load()
        return work(runtime)
    finally:
        runtime.close()


def fidelity_report(variant_runtime, fp32: dict, rows: list[dict], min_agreement: float) -> dict:
    """Scores every row's chosen and rejected reply, each alone, with the (loaded) variant and
    applies the gate against fp32's scores of the same rows (pair_scores of fp32 ONNX Runtime,
    scored once per model and set by the fp32_pair_scores rule)."""
    variant = pair_scores(variant_runtime, rows)
    if fp32["ids"] != variant["ids"]:
        raise RmbenchError("the fp32 pair scores are of other rows than the gate's: rerun fp32_pair_scores")
    found = preference_fidelity(variant["chosen"], variant["rejected"], fp32["chosen"], fp32["rejected"])
    return {
        "ids": variant["ids"],
        # The variant's own scores of the chosen replies: what its launches must reproduce.
        "scores": variant["chosen"],
        "rejected_scores": variant["rejected"],
        "fp32_scores": fp32["chosen"],
        "fp32_rejected_scores": fp32["rejected"],
        **found,
        **gate_verdict(found, min_agreement),
    }


def gate_verdict(found: dict, min_agreement: float) -> dict:
    """The gate's rule on preference_fidelity's numbers: passed at min_agreement or more."""
    return {"min_agreement": min_agreement, "passed": found["preference_agreement"] >= min_agreement}
