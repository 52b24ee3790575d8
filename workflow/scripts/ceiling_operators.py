"""Where a model's time goes against the GEMM ceiling: ONNX Runtime's operator profile of the
export the latency study's engines load, on its rows as a launch scores them, and the ceiling
probed in the same process (rmbench.probes.roofline.ceiling_profile)."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.glue import logged, write_json
from rmbench.probes.provenance import provenance
from rmbench.probes.roofline import ceiling_profile, reached_share

with logged(snakemake.log[0]):
    without_torch()  # ONNX Runtime alone
    par, w, inp = snakemake.params, snakemake.wildcards, snakemake.input
    rows = load_set(inp.rows)
    rows = rows[: par.rows] if par.rows else rows  # the study's rows, as its launches
    print(
        f"profiling {w.model} ({inp.onnx}): {len(rows)} rows after {par.warmup} warm-up, {par.threads} threads"
    )
    record = ceiling_profile(
        inp.onnx, inp.model, rows, w.model, par.threads, par.warmup, par.max_length, inp.get("operators")
    )
    before, after = record["ceiling"]["ceiling_probes_gflops"]
    print(
        f"{record['profile']['call_ms_per_row']:.2f} ms a row; ceiling probed {before:.1f} and {after:.1f} "
        f"GFLOP/s at {record['tokens']} tokens; {100 * reached_share(record):.1f}% of the higher reached"
    )
    write_json(
        record | {"optimizer": par.optimizer, "provenance": provenance(par.repo, "cpu")}, snakemake.output[0]
    )
