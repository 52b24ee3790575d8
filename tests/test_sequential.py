"""Sequential launches: the looks, the decision at each look, and its error rates on simulated
launches (a true difference is found; a true tie is not called a difference more often than
alpha; a tie inside the margin is shown)."""

import json

import numpy as np
import pandas as pd
import pytest
from rmbench.report.tables import design_verdicts
from rmbench.stats.sequential import (
    block_looks,
    block_schedule,
    decide,
    decisions_table,
    design_verdict,
    look_counts,
    look_decision,
    look_levels,
)

MIN, CAP, STEP, ALPHA, MARGIN = 3, 15, 3, 0.05, 0.03
LEVELS = look_levels(look_counts(MIN, CAP, STEP), ALPHA)  # the default profile's looks


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
    rounds = []
    for level, count in zip(LEVELS, look_counts(MIN, CAP, STEP)):
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


@pytest.mark.parametrize("cv, drift", [(0.03, 0.0), (0.05, 0.0), (0.10, 0.05)])
def test_a_true_tie_is_called_a_difference_at_most_alpha_and_at_least_half_of_it(cv, drift):
    """The error rate from both sides: never above alpha, and not far below it, for a rule that
    spends much less than alpha gives away power it could have had. The spending across looks
    (a union bound) keeps it somewhat under alpha: 3.2-3.4% here."""
    rng = np.random.default_rng(1)
    outcomes = [run_sequentially(rng, 1.0, cv, drift)[0] for _ in range(2000)]
    assert ALPHA / 2 <= outcomes.count("difference") / len(outcomes) <= ALPHA


@pytest.mark.parametrize(
    "ratio, cv, drift, power",
    [
        (1.05, 0.03, 0.0, 0.90),  # a 5% lead at the host's usual launch spread (CV 2-4%)
        (1.05, 0.03, 0.02, 0.90),  # ... with drift between rounds, which pairing cancels
        (1.10, 0.05, 0.0, 0.95),  # a 10% lead at a noisy host's spread
        (1.05, 0.05, 0.0, 0.50),  # a 5% lead there: found in about half the blocks by the cap
    ],
)
def test_a_true_difference_the_size_the_profiles_look_for_is_found_by_the_cap(ratio, cv, drift, power):
    """The power at the effects the studies decide (5-10% between runtimes), with the default
    profile's looks (3 launches, 3 more a look, up to 15)."""
    rng = np.random.default_rng(2)
    runs = [run_sequentially(rng, ratio, cv, drift) for _ in range(500)]
    assert sum(d == "difference" for d, _ in runs) / len(runs) >= power
    assert np.median([n for d, n in runs if d == "difference"]) < CAP  # most stop before the cap


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


def test_the_engine_is_compared_with_each_peer_too():
    """native against ORT-Python (the language pair) and OpenVINO, not against torch.compile; a
    peer's pair is extended like a baseline comparison while undecided."""
    runtime_of = {"e": "hf_eager", "n": "native", "o": "ort_python", "v": "openvino", "t": "torch_compile"}
    table = launches(
        {"e": [100, 100, 100], "n": [50, 52, 51], "o": [51, 50, 52], "v": [53, 49, 51], "t": [70, 71, 70]},
        runtime_of,
    )
    limits = dict.fromkeys(runtime_of, (3, 15)) | {"t": (3, 3), "e": (3, 3)}
    decision = look_decision(table, "latency", "hf_eager", limits, 1, STEP, ALPHA, MARGIN)
    pairs = {(r["candidate"], r["baseline"]): r["decision"] for r in decision["comparisons"]}
    assert set(pairs) == {("n", "e"), ("o", "e"), ("v", "e"), ("t", "e"), ("n", "o"), ("n", "v")}
    assert pairs[("n", "o")] == pairs[("n", "v")] == "undecided" and decision["extend"] == ["n", "o", "v"]


def write_looks(folder, decisions: list[dict]) -> list:
    """Look files as the pipeline writes them: results/sequential/<study>/<model>/<device>/<set>/look~k.json."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for decision in decisions:
        path = folder / f"look~{decision['look']}.json"
        path.write_text(json.dumps(decision))
        paths.append(path)
    return paths


def looks_of_a_block(drawn: dict[str, list[float]], runtime_of: dict[str, str], limits) -> list[dict]:
    """A block's looks as the pipeline runs them: each look extends the cells it names, by STEP."""
    counts = {key: minimum for key, (minimum, _) in limits.items()}
    decisions = []
    for look in range(1, block_looks(limits, STEP) + 1):
        table = launches({key: drawn[key][: counts[key]] for key in drawn}, runtime_of)
        decisions.append(look_decision(table, "latency", "hf_eager", limits, look, STEP, ALPHA, MARGIN))
        if not decisions[-1]["extend"]:
            break
        for key in decisions[-1]["extend"]:
            counts[key] = min(limits[key][1], counts[key] + STEP)
    return decisions


def test_a_comparisons_verdict_is_its_first_decisive_look():
    look = lambda k, decision, direction="": (
        {"look": k, "level": 0.01 * k, "alpha_spent": 0.02 * k}
        | {
            "decision": decision,
            "direction": direction,
        }
    )
    rows = [look(1, "undecided"), look(2, "difference", "slower"), look(3, "undecided")]
    assert design_verdict(rows) == {"verdict": "slower", "verdict_look": 2, "verdict_level": 0.02}
    assert design_verdict([look(1, "tie"), look(2, "difference", "faster")])["verdict"] == "tied"
    assert design_verdict([look(1, "undecided"), look(2, "undecided")]) == {
        "verdict": "undecided",
        "verdict_look": 2,
        "verdict_level": 0.04,  # all the alpha spent by then
    }


def test_the_verdict_column_calls_a_difference_where_there_is_none_at_most_alpha_of_the_time(tmp_path):
    """Launches with no true difference (5% noise, the paper tier's 3 to 9 launches), through the
    looks as the pipeline runs them, their files and the verdicts the study table takes."""
    rng = np.random.default_rng(4)
    runtime_of = {"hf_eager/set~s": "hf_eager", "native/set~s": "native", "ort_python/set~s": "ort_python"}
    limits = dict.fromkeys(runtime_of, (3, 9))
    verdicts, blocks = [], 300
    for run in range(blocks):
        drawn = {key: list(100 * (1 + rng.normal(0, 0.05, 9))) for key in runtime_of}
        files = write_looks(tmp_path / f"{run}/latency/m/cpu/s", looks_of_a_block(drawn, runtime_of, limits))
        table = design_verdicts(decisions_table(files), "latency")
        verdicts += list(table["verdict"])
    assert len(verdicts) == 3 * blocks  # native and ORT-Python against eager, and against each other
    differences = sum(v in ("faster", "slower") for v in verdicts)
    assert differences / len(verdicts) <= ALPHA
    assert set(verdicts) <= {"faster", "slower", "tied", "undecided"}


def test_the_study_table_quotes_the_looks_verdict_and_keeps_the_papers_rule_beside_it(tmp_path):
    """As ELECTRA torch.compile in the run of 2026-12-04: its 3 launches' interval clears eager's
    (the paper's rule: faster) while the first look's paired test, at its small level, leaves it
    undecided, and no look follows (torch.compile is at its cap)."""
    from rmbench.report.latex import study_latex
    from rmbench.report.tables import group_keys, study_table
    from rmbench.stats.across_launches import compare_latency, summarize

    runtime_of = {"hf_eager/set~s": "hf_eager", "torch_compile/set~s": "torch_compile"}
    drawn = {"hf_eager/set~s": [125.0, 123.0, 127.0], "torch_compile/set~s": [113.0, 111.5, 114.0]}
    limits = {"hf_eager/set~s": (3, 9), "torch_compile/set~s": (3, 3)}
    files = write_looks(tmp_path / "latency/m/cpu/s", looks_of_a_block(drawn, runtime_of, limits))
    table = launches(drawn, runtime_of).assign(host="h", reason="", p95_ms=lambda t: 1.5 * t.p50_ms)
    keys = group_keys("latency")
    summary = summarize(table, [*keys, "runtime"], ["p50_ms", "p95_ms"])
    compared = compare_latency(table, keys, "runtime", "p50_ms")
    out = study_table(summary, compared, "latency", "hf_eager", sequential=decisions_table(files))
    row = out.set_index("runtime").loc["torch_compile"]
    assert row.paper_verdict == "faster" and row.verdict == "undecided" and row.verdict_look == "1 of 3"
    assert row.verdict_alpha == ALPHA and row.verdict_level == pytest.approx(look_levels([3, 6, 9], ALPHA)[0])
    # without looks, the verdict is the overlap rule at 95%, for launches fixed in advance
    fixed = study_table(summary, compared, "latency", "hf_eager").set_index("runtime").loc["torch_compile"]
    assert fixed.verdict == fixed.paper_verdict == "faster" and fixed.verdict_look == ""
    latex = study_latex(out, "latency", "hf_eager", "Latency.", "tab:latency")
    assert "undecided (look 1 of 3) & overlap" not in latex and "undecided (look 1 of 3) & apart" in latex
    assert "Its looks share alpha = 0.05" in latex and "95\\% CIs: the paper's rule" in latex


def test_the_best_runtime_table_says_what_the_looks_decided_either_way_round(tmp_path):
    """The runner-up may be the look's baseline (native against ORT-Python is looked at as
    native vs ORT-Python): the verdict is then turned round."""
    from rmbench.report.tables import best_runtime_table, group_keys
    from rmbench.stats.across_launches import compare_latency, summarize

    runtime_of = {f"{r}/set~s": r for r in ("hf_eager", "native", "ort_python")}
    drawn = {
        "hf_eager/set~s": [200.0, 201, 199],
        "native/set~s": [150.0, 151, 149],
        "ort_python/set~s": [100.0, 101, 99],
    }
    limits = dict.fromkeys(runtime_of, (3, 3))
    files = write_looks(tmp_path / "latency/m/cpu/s", looks_of_a_block(drawn, runtime_of, limits))
    table = launches(drawn, runtime_of).assign(host="h", reason="")
    keys = group_keys("latency")
    summary = summarize(table, [*keys, "runtime"], ["p50_ms"])
    compared = compare_latency(table, keys, "runtime", "p50_ms")
    best = best_runtime_table(summary, compared, "hf_eager", "s", sequential=decisions_table(files)).iloc[0]
    assert (best.best, best.runner_up) == ("ort_python", "native")
    assert best.over_baseline_shows == "faster (look 1 of 1)"
    assert best.over_runner_up_shows == "faster (look 1 of 1)"  # the look said native is slower
    plain = best_runtime_table(summary, compared, "hf_eager", "s").iloc[0]
    assert plain.over_runner_up_shows == "faster (CIs apart)"
