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
from typing import TYPE_CHECKING

import numpy as np

from rmbench.errors import RmbenchError
from rmbench.export.onnx_files import MATMUL_GROUPS, MATMUL_PARTS
from rmbench.plan.cells import format_params
from rmbench.stats.across_launches import agreement_interval, pairs_to_show

if TYPE_CHECKING:
    import pandas as pd

POOLED_SET = "pooled"  # the fidelity table's gate over every gated set's pairs together


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


def gate_resolution(gates: pd.DataFrame, min_agreement: float) -> tuple[int, float, int]:
    """What the gates' sample can show: the fewest pairs a gate scored, the lower bound of full
    agreement over them, and how many pairs without a flip would show `min_agreement`."""
    pairs = int(gates["pairs"].min())
    return pairs, agreement_interval(pairs, pairs)[0], pairs_to_show(min_agreement)
