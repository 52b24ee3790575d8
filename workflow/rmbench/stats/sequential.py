"""Sequential launches: a block runs its launches in looks and stops once its comparisons are decided.

A block (cells.comparison_block) starts with each cell's minimum launches. At each look every
comparison the block's table reports against its baseline (and the native engine against its
peers) is one of:

- a difference: the interval of the relative difference, paired by launch round, excludes zero at
  the look's level (a paired t-test on the rounds' log ratios);
- a tie: the interval of the relative difference, paired by launch round, lies within the
  equivalence margin (two one-sided tests);
- undecided: neither. Where both of its cells are below their caps, they get `step` more
  launches (a comparison with a cell at its cap would gain little from launches of the other).

The error rate stays honest under repeated looks: the looks are fixed in advance by the block's
launch counts, and alpha is spent across them by the Lan-DeMets spending function of O'Brien-
Fleming type (Lan and DeMets, Discrete sequential boundaries for clinical trials, Biometrika 70,
1983): look k tests at alpha(t_k) - alpha(t_k-1), t_k being its share of the cap's launches. The
levels add up to alpha, so by the union bound (Bonferroni) the chance that any look calls a
difference where there is none stays at or below alpha whatever the looks' correlation. Early
looks test at tiny levels and the last near alpha, where the launches are (Jennison and Turnbull,
Group Sequential Methods with Applications to Clinical Trials, 2000, ch. 7).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from scipy.special import ndtr, ndtri

from rmbench.plan.cells import CELL_PATH, comparison_block
from rmbench.plan.studies import ENGINE_PEERS, LANGUAGE_PAIR, STUDIES
from rmbench.report.tables import compared_metrics, group_keys, launch_row
from rmbench.stats.across_launches import (
    equivalence_verdict,
    launch_pairs,
    paired_difference_interval,
)

LOOK_PATH = "results/sequential/{study}/{model}/{device}/{set}/look~{look}.json"
DECISIONS = ("difference", "tie", "undecided")


def look_counts(minimum: int, cap: int, step: int) -> list[int]:
    """The launch count of a cell at each look where it stays undecided: minimum, +step, ..., cap."""
    counts = [minimum]
    while counts[-1] < cap:
        counts.append(min(cap, counts[-1] + step))
    return counts


def counts_at_look(
    limits: dict[str, tuple[int, int]], step: int, extended: list[list[str]]
) -> dict[str, int]:
    """Each cell's launches at a look: its minimum, plus `step` for each earlier look that
    extended it (`extended`: each earlier look's cells), up to its cap."""
    counts = {key: minimum for key, (minimum, _) in limits.items()}
    for look in extended:
        for key in look:
            counts[key] = min(limits[key][1], counts[key] + step)
    return counts


def block_schedule(limits: dict[str, tuple[int, int]], step: int) -> list[int]:
    """The launch counts at the block's looks: those of its cell with the most looks."""
    return max((look_counts(lo, cap, step) for lo, cap in limits.values()), key=len)


def block_looks(limits: dict[str, tuple[int, int]], step: int) -> int:
    """How many looks a block plans (K): the most any of its cells (min, cap) can take."""
    return len(block_schedule(limits, step))


def spent(alpha: float, share: float) -> float:
    """O'Brien-Fleming-type spending: the error rate spent once `share` of the launches ran."""
    return float(2 - 2 * ndtr(ndtri(1 - alpha / 2) / share**0.5))  # the normal's cdf and quantile


def look_levels(schedule: list[int], alpha: float) -> list[float]:
    """Each look's level: what the spending function spends between it and the look before."""
    shares = [count / schedule[-1] for count in schedule]
    cumulative = [spent(alpha, share) for share in shares]
    return [b - a for a, b in zip([0.0, *cumulative], cumulative)]


def decide(candidate: pd.Series, baseline: pd.Series, level: float, margin: float) -> str:
    """One comparison at one look at this level, each side a metric by launch number (lower is
    better)."""
    pairs = launch_pairs(candidate, baseline)
    if len(pairs[0]) < 2:
        return "undecided"
    # A paired t-test at this look's level: the (1 - level) interval of the rounds' log ratios
    # clear of zero. Drift between rounds moves both sides of a pair and cancels.
    lo, hi = paired_difference_interval(*pairs, confidence=1 - level)
    if lo > 0 or hi < 0:
        return "difference"
    # TOST at this look's level: the (1 - 2 level) interval inside the margin.
    lo, hi = paired_difference_interval(*pairs, confidence=1 - 2 * level)
    return "tie" if equivalence_verdict(lo, hi, margin) == "equivalent" else "undecided"


def cell_key(cell: dict) -> str:
    """A cell of a block by name: runtime and parameters."""
    return f"{cell['runtime']}/{cell['params']}"


def sequential_blocks(launches: list[dict]) -> dict[tuple, dict[str, tuple[int, int]]]:
    """The blocks of a cell table (every launch up to each cap) with a cell whose cap is above its
    minimum: {block: {cell key: (minimum, cap)}}, cells in the table's order."""
    blocks: dict[tuple, dict[str, tuple[int, int]]] = {}
    for cell in launches:
        if cell["launch"] == 1:
            limits = (cell["minimum"], cell["cap"])
            blocks.setdefault(comparison_block(cell), {})[cell_key(cell)] = limits
    return {
        block: cells
        for block, cells in blocks.items()
        if any(cap > minimum for minimum, cap in cells.values())
    }


def block_launch_paths(block: tuple, counts: dict[str, int]) -> list[str]:
    """The result paths of a block's first `counts[key]` launches of each cell."""
    study, model, device, _ = block
    paths = []
    for key, count in counts.items():
        runtime, params = key.split("/", 1)
        cell = {"study": study, "model": model, "device": device, "runtime": runtime, "params": params}
        paths += [CELL_PATH.format(**cell, launch=launch) for launch in range(1, count + 1)]
    return paths


def block_launches(paths: list[str | Path]) -> pd.DataFrame:
    """The block's launches as launch_table rows, each with its cell's key."""
    rows = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        rows.append(launch_row(record) | {"cell_key": cell_key(record["cell"])})
    return pd.DataFrame(rows)


def comparisons(table: pd.DataFrame, study: str, baseline: str) -> list[tuple[str, str]]:
    """The (candidate, baseline) cell keys whose verdicts the block's tables report: every cell
    against the study's baseline within its group, and for latency the native engine against
    each of its peers (ENGINE_PEERS: the language pair's Python side first)."""
    between = STUDIES[study]["between"]
    keys = [k for k in group_keys(study) if k in table]
    pairs = []
    for _, group in table.groupby(keys, sort=True):
        cells = dict(zip(group[between], group["cell_key"]))
        if baseline in cells:
            pairs += [(cells[name], cells[baseline]) for name in sorted(cells) if name != baseline]
        native = LANGUAGE_PAIR[0]
        if study == "latency" and native in cells and native != baseline:
            pairs += [
                (cells[native], cells[peer]) for peer in ENGINE_PEERS if peer in cells and peer != baseline
            ]
    return pairs


def look_decision(
    table: pd.DataFrame,
    study: str,
    baseline: str,
    limits: dict[str, tuple[int, int]],
    look: int,
    step: int,
    alpha: float,
    margin: float,
) -> dict:
    """The decision file of one look: every comparison's state, and the cells to extend (those
    of an undecided comparison whose cells both have ok launches and are below their caps)."""
    levels = look_levels(block_schedule(limits, step), alpha)
    looks, level = len(levels), levels[look - 1]
    metric = compared_metrics(study)[0]
    ok = table[table["status"] == "ok"]
    values = {key: g.set_index("launch")[metric].sort_index() for key, g in ok.groupby("cell_key")}
    launched = table.groupby("cell_key")["launch"].max().to_dict()
    empty = pd.Series(dtype=float)
    rows, extend = [], set()
    for cand, base in comparisons(table, study, baseline):
        a, b = values.get(cand, empty), values.get(base, empty)
        decision = decide(a, b, level, margin)
        # a difference's direction: lower is better
        direction = ("faster" if a.mean() < b.mean() else "slower") if decision == "difference" else ""
        rows.append(
            {"candidate": cand, "baseline": base, "metric": metric, "n_candidate": len(a)}
            | {"n_baseline": len(b), "decision": decision, "direction": direction}
        )
        if decision == "undecided" and all(k in values and launched[k] < limits[k][1] for k in (cand, base)):
            extend |= {cand, base}
    return {
        "study": study,
        "look": look,
        "looks": looks,
        "alpha": alpha,
        "level": level,  # this look's share of alpha
        "alpha_spent": sum(levels[:look]),
        "launches": {k: int(n) for k, n in sorted(launched.items())},
        "comparisons": rows,
        "extend": sorted(extend) if look < looks else [],
    }


def progress_line(decision: dict) -> str:
    """What a person reads after each look: how far the block is and what comes next."""
    settled = sum(r["decision"] != "undecided" for r in decision["comparisons"])
    if decision["extend"]:
        state = f"{len(decision['extend'])} cells get more launches"
    elif settled < len(decision["comparisons"]):
        state = "block done, the rest undecided at the cap"
    else:
        state = "block done"
    return (
        f"look {decision['look']} of at most {decision['looks']}: "
        f"{sum(decision['launches'].values())} launches, {settled} of {len(decision['comparisons'])} "
        f"comparisons settled; {state}"
    )


def design_verdict(looks: list[dict]) -> dict:
    """One comparison's verdict from its rows at a block's looks, in order: what the first look
    that decided it said ('faster', 'slower' or 'tied'), at that look and its level; 'undecided'
    at the last look where none did. Any look calling a difference spends its own share of alpha,
    so over the looks a difference is called where there is none at most alpha of the time (the
    module's docstring). Later looks, run for the block's other comparisons, do not reopen it."""
    for row in looks:
        if row["decision"] != "undecided":
            # look files from before directions were recorded say only that they differ
            verdict = row.get("direction") or "different" if row["decision"] == "difference" else "tied"
            return {"verdict": verdict, "verdict_look": row["look"], "verdict_level": row["level"]}
    last = looks[-1]
    return {"verdict": "undecided", "verdict_look": last["look"], "verdict_level": last["alpha_spent"]}


def decisions_table(look_files: list[str | Path]) -> pd.DataFrame:
    """Each block's comparisons at its last look (launch counts, that look's decision), with the
    block, the look and its level; and each comparison's verdict over all the block's looks
    (design_verdict: `verdict`, `verdict_look`, `verdict_level`). `look_files`: every look of
    each block."""
    looks: dict[tuple, list[dict]] = {}
    for path in look_files:
        decision = json.loads(Path(path).read_text())
        block = tuple(Path(path).parts[-4:-1])
        for comparison in decision["comparisons"]:
            key = (*block, comparison["candidate"], comparison["baseline"])
            looks.setdefault(key, []).append(
                comparison
                | {field: decision[field] for field in ("look", "looks", "level", "alpha", "alpha_spent")}
            )
    rows = []
    for (model, device, set_name, *_), found in sorted(looks.items()):
        found.sort(key=lambda row: row["look"])
        last = {k: v for k, v in found[-1].items() if k != "alpha_spent"}
        rows.append({"model": model, "device": device, "set": set_name} | last | design_verdict(found))
    return pd.DataFrame(rows)
