"""One launch of one cell, in this fresh process; writes its result record."""

import os

import _bootstrap  # noqa: F401  (makes rmbench importable)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one pair at a time: no Rust thread pool

from rmbench.data import load_set
from rmbench.glue import logged, read_json, write_json
from rmbench.launch import run_launch
from rmbench.provenance import provenance

with logged(snakemake.log[0]):
    w = snakemake.wildcards
    cell = {
        "study": w.study,
        "model": w.model,
        "device": w.device,
        "runtime": w.runtime,
        "params": w.params,
        "launch": int(w.launch),
    }
    reference = read_json(snakemake.input.reference)
    rows = load_set(snakemake.input.rows)
    if reference["ids"] != [r["id"] for r in rows]:
        raise RuntimeError(f"{snakemake.input.reference} does not match {snakemake.input.rows}")
    record = run_launch(
        cell,
        rows,
        reference["scores"],
        snakemake.input.model,
        snakemake.input.onnx,
        dict(snakemake.params.settings),
    )
    record["provenance"] = provenance(snakemake.params.repo, w.device)
    write_json(record, snakemake.output[0])
    print(f"{snakemake.output[0]}: {record['status']} {record['reason'] or ''}")
    if record["metrics"]:
        print(f"p50 {record['metrics']['p50_ms']:.1f} ms, p95 {record['metrics']['p95_ms']:.1f} ms")
