"""Why a CPU batch is no faster per row: ONNX Runtime's operator profile of one model's rows, each
alone and as a batch of copies of itself, taken in turn in one session."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.probes.operators import operator_profiles
from rmbench.probes.provenance import provenance

with logged(snakemake.log[0]):
    without_torch()  # ONNX Runtime alone
    par, w = snakemake.params, snakemake.wildcards
    rows = load_set(snakemake.input.rows)
    rows = rows[: par.warmup + par.rows] if par.rows else rows  # the configured first rows
    pairs = [(r["prompt"], r["response"]) for r in rows]
    batches = (1, par.batch)
    print(
        f"profiling {w.model} ({snakemake.input.onnx}): {len(pairs)} rows ({par.warmup} warm-up), each alone "
        f"and as {par.batch} copies in turn, {par.threads} threads"
    )
    profiles = operator_profiles(
        snakemake.input.onnx,
        snakemake.input.model,
        pairs,
        par.threads,
        par.warmup,
        par.max_length,
        batches,
        snakemake.input.get("operators"),
    )
    for batch, profile in profiles.items():
        per_row = sum(o["ms_per_row"] for o in profile["operators"])
        print(
            f"batch {batch}: {per_row:.2f} ms of kernel time per row, matrix products {100 * profile['matrix_share']:.1f}%"
        )
    write_json(
        {"model": w.model, "optimizer": w.optimizer, "profiles": {str(b): p for b, p in profiles.items()}}
        | {"provenance": provenance(par.repo, "cpu")},
        snakemake.output[0],
    )
