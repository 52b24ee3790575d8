"""One line per launch that a person can read: which block, how far, about how long is left."""

from __future__ import annotations

import itertools
import os
import statistics
from pathlib import Path

from .cells import cell_table, comparison_block


def seconds_per_launch(paths: list[Path]) -> float | None:
    """The median gap between the finishing times of the launch files already written (what a
    launch costs in this run, Snakemake's own time between jobs included); None under 3 files."""
    times = sorted(os.stat(p).st_mtime for p in paths)
    gaps = [b - a for a, b in itertools.pairwise(times) if b - a < 3600]  # a pause is no launch's cost
    return statistics.median(gaps) if len(gaps) >= 2 else None


def launch_progress(config: dict, cell: dict, root: Path) -> str:
    """'latency deberta cpu main60: block 3 of 41, launch 7 of 30 in it; about 12 min of planned
    launches left in the run'. Planned launches are every cell's minimum; a block whose
    comparisons stay undecided adds some (rmbench.sequential)."""
    planned = [c for c in cell_table(config) if c["launch"] <= c["minimum"] and c["device"] == cell["device"]]
    blocks = list(dict.fromkeys(comparison_block(c) for c in planned))
    block = comparison_block(cell)
    in_block = [c for c in planned if comparison_block(c) == block]
    done = [root / c["path"] for c in planned if (root / c["path"]).exists()]
    done_in_block = sum((root / c["path"]).exists() for c in in_block)
    where = f"block {blocks.index(block) + 1} of {len(blocks)}" if block in blocks else "an extra block"
    line = (
        f"{' '.join(block)}: {where}, launch {done_in_block + 1} of {len(in_block)} planned in it "
        f"({cell['runtime']} {cell['params']} launch {cell['launch']})"
    )
    cost = seconds_per_launch(done)
    if cost is not None:
        left = len(planned) - len(done)
        line += f"; about {left * cost / 60:.0f} min of planned launches left in the run"
    return line
