"""Sequential launches: the looks, the decision at each look, and its error rates on simulated
launches (a true difference is found; a true tie is not called a difference more often than
alpha; a tie inside the margin is shown)."""

import numpy as np
import pandas as pd
import pytest
from rmbench.sequential import block_looks, block_schedule, decide, look_counts, look_decision, look_levels

MIN, CAP, STEP, ALPHA, MARGIN = 3, 15, 3, 0.05, 0.03


def test_looks_run_from_the_minimum_to_the_cap():
    assert look_counts(3, 15, 3) == [3, 6, 9, 12, 15]
    assert look_counts(3, 10, 4) == [3, 7, 10]
    assert look_counts(5, 5, 3) == [5]
    assert block_looks({"a": (3, 15), "b": (3, 3)}, 3) == 5


def test_the_looks_spend_alpha_and_the_last_look_most_of_it():
    """O'Brien-Fleming-type spending: the levels add up to alpha, early looks test at tiny levels."""
    levels = look_levels(block_schedule({"a": (3, 9), "b": (3, 3)}, 3), ALPHA)
    assert sum(levels) == pytest.approx(ALPHA)
    assert levels == sorted(levels) and levels[0] < 0.001 and levels[-1] > ALPHA / 2
    assert look_levels([3], ALPHA) == pytest.approx([ALPHA])  # one look: the nominal level


def test_an_early_look_on_two_noisy_pairs_is_undecided_not_an_overflow():
    """At the first look's tiny level, two pairs (a t quantile with one degree of freedom) put the
    tie interval's bounds past float range; the look must still decide (smoke's minimum is 2)."""
    level = look_levels(look_counts(2, 8, 2), ALPHA)[0]
    cand, base = pd.Series([100.0, 160.0], index=[1, 2]), pd.Series([150.0, 90.0], index=[1, 2])
    assert decide(cand, base, level, MARGIN) == "undecided"


def run_sequentially(rng, ratio: float, cv: float, drift: float) -> tuple[str, int]:
    """One simulated block: launches of a candidate and a baseline, round by round, each round
    moved by the machine's drift (shared by both sides of a round), until decided or capped."""
    levels = look_levels(look_counts(MIN, CAP, STEP), ALPHA)
    rounds = []
    for level, count in zip(levels, look_counts(MIN, CAP, STEP)):
        while len(rounds) < count:
            shift = 1 + rng.normal(0, drift)
            rounds.append(
                (100 * ratio * shift * (1 + rng.normal(0, cv)), 100 * shift * (1 + rng.normal(0, cv)))
            )
        index = pd.RangeIndex(1, count + 1)
        cand = pd.Series([c for c, _ in rounds], index=index)
        base = pd.Series([b for _, b in rounds], index=index)
        decision = decide(cand, base, level, MARGIN)
        if decision != "undecided":
            return decision, count
    return "undecided", CAP


@pytest.mark.parametrize("cv, drift", [(0.05, 0.0), (0.10, 0.05)])
def test_a_true_tie_is_not_called_a_difference_more_often_than_alpha(cv, drift):
    rng = np.random.default_rng(1)
    outcomes = [run_sequentially(rng, 1.0, cv, drift)[0] for _ in range(2000)]
    assert outcomes.count("difference") / len(outcomes) <= ALPHA


def test_a_true_difference_is_found_before_the_cap():
    rng = np.random.default_rng(2)
    runs = [run_sequentially(rng, 1.25, 0.05, 0.02) for _ in range(500)]
    assert sum(d == "difference" for d, _ in runs) / len(runs) >= 0.95
    assert np.median([n for _, n in runs]) < CAP


def test_a_tie_well_inside_the_margin_is_shown_with_paired_rounds():
    """Drift moves both sides of a round, so pairing by round shows the tie where the launches'
    own spread would not."""
    rng = np.random.default_rng(3)
    runs = [run_sequentially(rng, 1.0, 0.005, 0.10) for _ in range(300)]
    assert sum(d == "tie" for d, _ in runs) / len(runs) >= 0.9


def launches(cells: dict[str, list[float]], runtime_of: dict[str, str]) -> pd.DataFrame:
    rows = []
    for key, values in cells.items():
        for i, v in enumerate(values, start=1):
            status = "ok" if np.isfinite(v) else "skipped"
            rows.append(
                {"cell_key": key, "runtime": runtime_of[key], "variant": "-", "model": "m", "device": "cpu"}
                | {"set": "s", "launch": i, "status": status, "p50_ms": v}
            )
    return pd.DataFrame(rows)


def test_a_look_extends_the_cells_of_undecided_comparisons_below_their_cap():
    """hf_eager is the baseline; native is far faster, torch_compile ties it within noise wider
    than the margin, fastapi's launches were all skipped (never extended)."""
    runtime_of = {"e": "hf_eager", "n": "native", "t": "torch_compile", "f": "fastapi"}
    table = launches(
        {
            "e": [100, 101, 99],
            "n": [50, 51, 50],
            "t": [90, 110, 104],
            "f": [np.nan, np.nan, np.nan],
        },
        runtime_of,
    )
    limits = {"e": (3, 15), "n": (3, 3), "t": (3, 9), "f": (3, 15)}
    first = look_decision(table, "latency", "hf_eager", limits, 1, STEP, ALPHA, MARGIN)
    assert first["looks"] == 5 and first["level"] == pytest.approx(look_levels([3, 6, 9, 12, 15], ALPHA)[0])
    # at the first look's tiny level nothing is decided; native is at its cap, so its comparison
    # extends neither side (more launches of one would leave the other's interval as wide)
    assert {r["decision"] for r in first["comparisons"]} == {"undecided"}
    assert first["extend"] == ["e", "t"]
    # at the last look native's difference shows, and nothing is extended past the cap
    last = look_decision(table, "latency", "hf_eager", limits, 5, STEP, ALPHA, MARGIN)
    by_candidate = {r["candidate"]: r["decision"] for r in last["comparisons"]}
    assert by_candidate == {"n": "difference", "t": "undecided", "f": "undecided"}
    assert last["extend"] == [] and last["alpha_spent"] == pytest.approx(ALPHA)


def test_the_language_pair_is_compared_too():
    runtime_of = {"e": "hf_eager", "n": "native", "o": "ort_python"}
    table = launches({"e": [100, 100, 100], "n": [50, 52, 51], "o": [51, 50, 52]}, runtime_of)
    limits = dict.fromkeys(runtime_of, (3, 15))
    decision = look_decision(table, "latency", "hf_eager", limits, 1, STEP, ALPHA, MARGIN)
    pairs = {(r["candidate"], r["baseline"]): r["decision"] for r in decision["comparisons"]}
    assert pairs[("n", "o")] == "undecided" and decision["extend"] == ["e", "n", "o"]
