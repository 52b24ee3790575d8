"""One launch of one cell, in this fresh process; writes its result record."""

import os
import time
from pathlib import Path

import _bootstrap  # noqa: F401  (makes rmbench importable)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one pair at a time: no Rust thread pool
if snakemake.wildcards.device == "cuda":
    # A cluster executor sets it per job; a local run uses the first GPU (one GPU job at a time).
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0")

from rmbench.plan.glue import logged, write_json
from rmbench.plan.progress import launch_progress
from rmbench.probes.provenance import provenance
from rmbench.studies.launch import launch_cell

w = snakemake.wildcards
cell = {
    "study": w.study,
    "model": w.model,
    "device": w.device,
    "runtime": w.runtime,
    "params": w.params,
    "launch": int(w.launch),
}
print(launch_progress(snakemake.config, cell, Path(".")), flush=True)  # on the terminal, before the log

with logged(snakemake.log[0]):
    started_at = time.time()  # the order launches actually ran in (see launch.order_seed)
    files = dict(snakemake.input.items())
    record = launch_cell(cell, files, dict(snakemake.params.settings), Path(snakemake.params.repo))
    record["started_at"] = started_at
    record["provenance"] = provenance(snakemake.params.repo, w.device)
    write_json(record, snakemake.output[0])
    print(f"{snakemake.output[0]}: {record['status']} {record['reason'] or ''}")
