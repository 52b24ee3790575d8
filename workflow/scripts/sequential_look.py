"""One look at a block's launches: writes its decisions and prints where the run stands."""

import _bootstrap  # noqa: F401  (makes rmbench importable)
from rmbench.plan.glue import logged, write_json
from rmbench.stats.sequential import block_launches, look_decision, progress_line

w = snakemake.wildcards
cfg = snakemake.params.settings
with logged(snakemake.log[0]):
    table = block_launches(snakemake.input)
    limits = {key: tuple(limit) for key, limit in cfg["limits"].items()}
    decision = look_decision(
        table, w.study, cfg["baseline"], limits, int(w.look), cfg["step"], cfg["alpha"], cfg["margin"]
    )
    write_json(decision, snakemake.output[0])
    line = f"{w.study} {w.model} {w.device} {w.set}: {progress_line(decision)}"
    print(line)
print(line, flush=True)  # and on the terminal
