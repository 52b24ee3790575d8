"""The line each launch prints: its block and round, how far the run is, the time left."""

import os
import time

from rmbench.plan.cells import cell_table
from rmbench.plan.progress import launch_progress, seconds_per_launch

CONFIG = {
    "studies": {
        "latency": {
            "sets": ["main60"],
            "models": ["deberta", "electra"],
            "devices": ["cpu"],
            "runtimes": {
                "hf_eager": {"launches": {"cpu": 2}},
                "native": {"launches": {"cpu": 2}, "cap": {"cpu": 4}},
            },
        }
    }
}


def test_a_launch_names_its_block_round_and_the_runs_progress(tmp_path):
    cells = {(c["model"], c["runtime"], c["launch"]): c for c in cell_table(CONFIG)}
    done = [cells["deberta", "hf_eager", 1], cells["deberta", "native", 1], cells["deberta", "hf_eager", 2]]
    for i, cell in enumerate(done):  # finished 24 s apart
        path = tmp_path / cell["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        os.utime(path, (time.time() - 90 + 24 * i,) * 2)
    line = launch_progress(CONFIG, cells["deberta", "native", 2], tmp_path)
    assert line.startswith("[latency deberta cpu main60] block 1 of 2, round 2: launch 4 of 4 in the block")
    # 8 planned launches (each cell's minimum), 3 done, 24 s apart: 5 left, 2 min
    assert "run: 3 of 8 planned launches done, about 2 min left" in line
    extra = launch_progress(CONFIG, cells["electra", "native", 3], tmp_path)
    assert "block 2 of 2, round 3: an extra launch" in extra


def test_no_estimate_before_launches_were_timed(tmp_path):
    cell = next(c for c in cell_table(CONFIG) if c["launch"] == 1)
    line = launch_progress(CONFIG, cell, tmp_path)
    assert line.endswith("run: 0 of 8 planned launches done")


def test_a_launch_file_removed_while_the_line_is_made_is_left_out(tmp_path):
    """Snakemake removes a launch's old file just before running it again: the progress line of a
    launch starting beside it may not fail on it."""
    paths = [tmp_path / f"launch~{i}.json" for i in range(4)]
    for i, path in enumerate(paths):
        path.write_text("{}")
        os.utime(path, (1000 + 10 * i, 1000 + 10 * i))
    paths[1].unlink()  # listed as done a moment ago, gone now
    assert seconds_per_launch(paths) == 15.0  # the three left: gaps of 20 and 10 s
