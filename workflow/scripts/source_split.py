"""Writes the whole hh-rlhf split (synthetic or hub) as JSONL."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.models.data import load_source, write_jsonl
from rmbench.plan.glue import logged

with logged(snakemake.log[0]):
    rows = load_source(snakemake.params.data)
    write_jsonl(rows, snakemake.output[0])
    print(f"wrote {len(rows)} rows from source '{snakemake.params.data['source']}'")
