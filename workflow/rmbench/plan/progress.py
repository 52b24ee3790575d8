"""One line per launch that a person can read: which block and round, how far the run is, and
about how long is left."""

from __future__ import annotations

import itertools
import os
import statistics
from pathlib import Path

from rmbench.plan.cells import CELL_PATH, cell_table, comparison_block


def finished_at(path: Path) -> float | None:
    """When a launch file was written; None if it is gone (Snakemake removes the old output of a
    launch it is about to run again, possibly while this line is being made)."""
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return None


def seconds_per_launch(paths: list[Path]) -> float | None:
    """The median gap between the finishing times of the launch files already written (what a
    launch costs in this run, Snakemake's own time between jobs included); None under 3 files."""
    times = sorted(t for t in map(finished_at, paths) if t is not None)
    gaps = [b - a for a, b in itertools.pairwise(times) if b - a < 3600]  # a pause is no launch's cost
    return statistics.median(gaps) if len(gaps) >= 2 else None


def launch_progress(config: dict, cell: dict, root: Path) -> str:
    """'[latency deberta cpu main60] block 3 of 14, round 2: launch 7 of 30 in the block (native
    set~main60); run: 45 of 129 planned launches done, about 12 min left'. Planned launches are
    every cell's minimum on the cell's device; a block whose comparisons stay undecided adds some
    (rmbench.stats.sequential), so the time left is a floor. A round is a launch number: every cell of
    a block runs its launch 1, then its launch 2, and so on."""
    table = cell_table(config)
    planned = [c for c in table if c["launch"] <= c["minimum"] and c["device"] == cell["device"]]
    path = CELL_PATH.format(**cell)
    minimum = next((c["minimum"] for c in table if c["path"] == path), cell["launch"])
    blocks = list(dict.fromkeys(comparison_block(c) for c in planned))
    block = comparison_block(cell)
    in_block = [c for c in planned if comparison_block(c) == block]
    done = [root / c["path"] for c in planned if (root / c["path"]).exists()]
    done_in_block = sum((root / c["path"]).exists() for c in in_block)
    where = f"block {blocks.index(block) + 1} of {len(blocks)}" if block in blocks else "an extra block"
    if cell["launch"] == 0:  # rule warm_compile_cache
        step = "the untimed launch that fills Inductor's cache"
    elif cell["launch"] > minimum:
        step = f"round {cell['launch']}: an extra launch, as a look left a comparison undecided"
    else:
        step = f"round {cell['launch']}: launch {done_in_block + 1} of {len(in_block)} in the block"
    line = (
        f"[{' '.join(block)}] {where}, {step} ({cell['runtime']} {cell['params']}); "
        f"run: {len(done)} of {len(planned)} planned launches done"
    )
    cost = seconds_per_launch(done)
    if cost is not None:
        line += f", about {(len(planned) - len(done)) * cost / 60:.0f} min left"
    return line
