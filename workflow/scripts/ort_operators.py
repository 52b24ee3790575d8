"""Where ONNX Runtime's time goes for one model, by operator type (its own profiler)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.probes.operators import operator_profile
from rmbench.probes.provenance import provenance

with logged(snakemake.log[0]):
    without_torch()  # ONNX Runtime alone
    par = snakemake.params
    rows = load_set(snakemake.input.rows)
    rows = rows[: par.warmup + par.rows] if par.rows else rows  # the study's rows, as its launches
    pairs = [(r["prompt"], r["response"]) for r in rows]
    print(
        f"profiling {snakemake.wildcards.model}: {len(pairs)} rows ({par.warmup} warm-up), {par.threads} threads"
    )
    profile = operator_profile(
        snakemake.input.onnx, snakemake.input.model, pairs, par.threads, par.warmup, par.max_length
    )
    top = ", ".join(f"{o['op_type']} {100 * o['share']:.1f}%" for o in profile["operators"][:4])
    print(f"matrix products {100 * profile['matrix_share']:.1f}% of operator time; {top}")
    write_json(
        {"model": snakemake.wildcards.model} | profile | {"provenance": provenance(par.repo, "cpu")},
        snakemake.output[0],
    )
