"""The native engine's gate: token ids as the HF tokenizer's on every set, scores as PyTorch's."""

from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import check_native_parity, native_parity_report
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, read_json, write_json
from rmbench.runtimes import Unsupported
from rmbench.runtimes.native import NativeRuntime

with logged(snakemake.log[0]):
    without_torch()  # the engine against stored PyTorch scores
    cfg = snakemake.params.parity
    runtime = NativeRuntime(
        snakemake.input.model,
        snakemake.input.onnx,
        "cpu",
        snakemake.params.threads,
        snakemake.params.max_length,
        {"binary": snakemake.input.binary},
    )
    try:
        runtime.load()
    except Unsupported as e:  # e.g. a hub model's own chat template: its cells say the same
        write_json({"passed": False, "unsupported": str(e)}, snakemake.output[0])
        print(f"native engine unsupported for {snakemake.input.model}: {e}")
    else:
        rows_by_set = {Path(p).stem: load_set(p) for p in snakemake.input.sets}
        reference = read_json(snakemake.input.reference)["scores"]
        report = native_parity_report(runtime, rows_by_set, reference, cfg["tolerance"], cfg["batch_size"])
        print(
            {k: v for k, v in report.items() if k != "token_mismatches"},
            len(report["token_mismatches"]),
            "token mismatches",
        )
        check_native_parity(report)
        write_json(report, snakemake.output[0])
