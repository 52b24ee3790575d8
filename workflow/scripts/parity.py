"""The parity gate: ONNX Runtime vs the PyTorch reference; a failure stops the pipeline, except
for an export whose launches report it instead (params.fatal false: the fused graph)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.export.onnx import check_parity, parity_report
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, read_json, write_json

with logged(snakemake.log[0]):
    cfg = snakemake.params.parity
    report = parity_report(
        snakemake.input.model,
        snakemake.input.onnx,
        load_set(snakemake.input.rows),
        read_json(snakemake.input.reference)["scores"],
        cfg["tolerance"],
        cfg["batch_size"],
        snakemake.params.threads,
        cfg["min_score_std"],
        snakemake.input.get("operators"),  # the native engine's operator library, where the export calls it
    )
    print(report)
    if snakemake.params.get("fatal", True):  # the export every launch loads; the fused graph may fail
        check_parity(report)
    write_json(report, snakemake.output[0])
