"""Where a model's time goes against the GEMM ceiling: ONNX Runtime's operator profile of the
export the latency study's engines load, on its rows alone, then the ceiling probed in the same
process at the rows' median length (as a launch probes it)."""

import statistics

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.data import load_set
from rmbench.flops import encoder_flops, model_config
from rmbench.gemm_bench import probe_ceiling
from rmbench.glue import logged, write_json
from rmbench.models import without_torch
from rmbench.operators import operator_profile
from rmbench.provenance import provenance

with logged(snakemake.log[0]):
    without_torch()  # ONNX Runtime alone
    par, w = snakemake.params, snakemake.wildcards
    rows = load_set(snakemake.input.rows)
    rows = rows[: par.rows] if par.rows else rows  # the study's rows, as its launches
    # as a launch: the first rows scored as warm-up, then every row timed
    pairs = [(r["prompt"], r["response"]) for r in rows[: par.warmup] + rows]
    print(
        f"profiling {w.model} ({snakemake.input.onnx}): {len(rows)} rows after {par.warmup} warm-up, "
        f"{par.threads} threads"
    )
    profile = operator_profile(
        snakemake.input.onnx, snakemake.input.model, pairs, par.threads, par.warmup, par.max_length
    )
    lengths = [min(r[f"tokens_{w.model}"], par.max_length) for r in rows]
    config = model_config(snakemake.input.model)
    tokens = int(statistics.median(lengths))
    ceiling = probe_ceiling(snakemake.input.model, tokens, par.threads)
    gflop_per_row = sum(encoder_flops(config, n) for n in lengths) / len(lengths) / 1e9
    reached = gflop_per_row / profile["call_ms_per_row"] * 1e3 / ceiling["ceiling_gflops"]
    print(
        f"{profile['call_ms_per_row']:.2f} ms a row, matrix products {100 * profile['matrix_share']:.1f}% of "
        f"kernel time; ceiling {ceiling['ceiling_gflops']:.1f} GFLOP/s at {tokens} tokens, "
        f"{100 * reached:.1f}% of it reached with the profiler on"
    )
    write_json(
        {
            "model": w.model,
            "optimizer": par.optimizer,
            "onnx": str(snakemake.input.onnx),
            "tokens": tokens,
            "gflop_per_row": gflop_per_row,
            "profile": profile,
            "ceiling": ceiling,
            "provenance": provenance(par.repo, "cpu"),
        },
        snakemake.output[0],
    )
