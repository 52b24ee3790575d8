"""The README's and findings' figures are those of the run they name (rmbench.report.readme)."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd
from rmbench.plan.profiles import config_hash, profile_config
from rmbench.report.readme import BLOCK, DOCS, config_drift, quoted_runs, write

ROOT = Path(__file__).resolve().parents[1]


def test_every_generated_block_is_what_its_run_makes():
    assert write(check=True) == []


def test_the_readmes_run_ran_the_config_all_runs_now():
    assert config_drift() == []


def test_a_config_edit_makes_the_quoted_run_out_of_date(tmp_path):
    """In a copy whose README run recorded today's config: no drift, and the blocks are current.
    An edit of config.yaml makes both say so; a comment does not."""
    for name in (*DOCS, "config.yaml", "workflow/profiles/default/config.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "workflow/schemas", tmp_path / "workflow/schemas")
    for run in quoted_runs():
        shutil.copytree(ROOT / run, tmp_path / run)
    for run in quoted_runs(tmp_path, ("README.md",)):  # as if recorded from today's config
        meta = json.loads((tmp_path / run / "run.json").read_text())
        meta["config_hash"] = config_hash(profile_config(ROOT))
        (tmp_path / run / "run.json").write_text(json.dumps(meta))
    write(check=False, root=tmp_path)
    assert config_drift(tmp_path) == [] and write(check=True, root=tmp_path) == []
    assert "Out of date" not in (tmp_path / "README.md").read_text()
    config = tmp_path / "config.yaml"
    config.write_text(config.read_text().replace("    rows: 30\n", "    rows: 29\n", 1))
    assert config.read_text() != (ROOT / "config.yaml").read_text()
    drift = config_drift(tmp_path)
    assert drift and all("the default profile's config is" in reason for reason in drift)
    assert write(check=True, root=tmp_path) == ["README.md"]  # the headline now says it is out of date
    write(check=False, root=tmp_path)
    assert "**Out of date:** the config changed since this run" in (tmp_path / "README.md").read_text()
    # a comment, or the same keys in another order, is the same config
    config.write_text("# a comment\n" + (ROOT / "config.yaml").read_text())
    assert config_drift(tmp_path) == []


def test_the_readme_quotes_no_speed_up_or_time_outside_its_generated_blocks():
    """Figures typed by hand drift from the runs (issue 50): a speed-up (1.32x) or a duration
    (22 min) in the README's prose must come from a generated block. Example output in fenced
    code blocks is not a figure."""
    text = BLOCK.sub("", (ROOT / "README.md").read_text())
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    figures = re.findall(r"\b\d+(?:\.\d+)?x\b|\b\d+ min\b|\b\d+ minutes\b", text)
    assert not figures, figures


def test_the_readme_stays_short():
    """A newcomer reads it in minutes: at most 200 lines and 1,500 words; the rest is in docs/."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200 and len(text.split()) <= 1500


def test_a_figure_changed_by_hand_is_found(tmp_path):
    for name in DOCS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    runs = {match["run"] for name in DOCS for match in BLOCK.finditer((ROOT / name).read_text())}
    assert runs  # the README quotes at least one run
    for run in runs:
        shutil.copytree(ROOT / run, tmp_path / run)
    readme = tmp_path / "README.md"
    headline = next(m for m in BLOCK.finditer(readme.read_text()) if m["name"] == "headline")
    edited = headline[0].replace("| baseline |", "| 1.00x |", 1)
    assert edited != headline[0]
    readme.write_text(readme.read_text().replace(headline[0], edited))
    assert write(check=True, root=tmp_path) == ["README.md"]
    assert write(check=False, root=tmp_path) == ["README.md"] and write(check=True, root=tmp_path) == []


def test_the_headline_says_how_close_the_best_runtime_runs_to_the_probed_ceiling():
    from rmbench.report.readme import ceiling_lines

    probed = ROOT / "docs/runlog/runs/2026-12-05-attention-export"  # its launches probed it
    line = ceiling_lines(probed)[-1]
    assert "deberta native optimizer=relative_shift, 78% [75, 82] of 195 GFLOP/s" in line
    assert ceiling_lines(ROOT / "docs/runlog/runs/2026-12-05-three-models") == []  # none probed


def test_the_headline_says_where_the_rest_of_the_ceiling_goes(tmp_path):
    from rmbench.report.readme import gap_lines

    assert gap_lines(tmp_path) == []  # a run without the table
    shares = {"the model's FLOPs at the ceiling": 0.7, "Slice": 0.1, "Where": 0.05, "Add": 0.12, "Div": 0.03}
    rows = [{"model": "deberta", "part": part, "share": share} for part, share in shares.items()]
    pd.DataFrame(rows).to_csv(tmp_path / "ceiling_gap.csv", index=False)
    line = gap_lines(tmp_path, parts=2)[-1]
    assert "deberta 70% at the ceiling, then Add 12%, Slice 10%." in line
