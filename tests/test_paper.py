"""The paper's quoted numbers: every metric, interval, speed-up and verdict of a study table on its
headline set becomes a LaTeX definition the text reads with \\rmnum{...}."""

import math
from pathlib import Path

import pandas as pd
import yaml
from rmbench.export.precision import POOLED_SET
from rmbench.plan.studies import STUDIES
from rmbench.report.paper import (
    DERIVED,
    numbers_tex,
    paper_numbers,
    quoted_keys,
    text_files,
    unmeasured_report,
)

ROOT = Path(__file__).resolve().parents[1]


def test_numbers_come_from_each_table_with_other_sets_named_in_the_key():
    latency = pd.DataFrame(
        [
            {"model": "deberta", "device": "cpu", "set": "main60", "variant": "-", "runtime": "native"}
            | {"launches_ok": 5, "launches": 5, "p50_ms": 314.66, "p50_ms_lo": 253.9, "p50_ms_hi": 375.5}
            | {"p95_ms": 400.0, "p95_ms_lo": math.nan, "p95_ms_hi": math.nan}
            | {"speedup": 1.7876, "speedup_conservative": 0.78, "verdict": "not distinguishable"}
            | {"speedup_boot_lo": 1.084, "speedup_boot_hi": 2.5}
            | {"speedup_paired_lo": 1.2049, "speedup_paired_hi": 2.31},
            {"model": "deberta", "device": "cpu", "set": "rep60a", "variant": "-", "runtime": "native"}
            | {"launches_ok": 3, "launches": 3, "p50_ms": 1.0, "p50_ms_lo": 0.5, "p50_ms_hi": 1.5},
        ]
    )
    batching = pd.DataFrame(
        [
            {"model": "electra", "device": "cpu", "set": "main60", "runtime": "native"}
            | {"variant": "batching~naive+batch~8", "launches_ok": 2, "launches": 3, "row_ms": 1234.5}
            | {"speedup": 0.13, "verdict": "slower"}
        ]
    )
    numbers = paper_numbers(
        {"latency": latency, "batching": batching}, {"latency": "main60", "batching": "main60"}
    )
    assert numbers["latency/deberta/cpu/native/p50_ms"] == "314.7"
    assert numbers["latency/deberta/cpu/native/p50_ms_ci"] == "[253.9, 375.5]"
    assert numbers["latency/deberta/cpu/native/speedup"] == "1.79"
    assert numbers["latency/deberta/cpu/native/speedup_ci"] == "[1.08, 2.50]"
    assert numbers["latency/deberta/cpu/native/speedup_paired_ci"] == "[1.20, 2.31]"
    assert "batching/electra/cpu/native/naive-b=8/speedup_ci" not in numbers  # no interval, no key
    assert numbers["latency/deberta/cpu/native/verdict"] == "not distinguishable"
    assert numbers["latency/deberta/cpu/native/launches"] == "5/5"
    assert "latency/deberta/cpu/native/p95_ms_ci" not in numbers  # no interval, no number
    # a replication set's cell is quoted under its own name, never in the headline's place
    assert numbers["latency@rep60a/deberta/cpu/native/p50_ms"] == "1.0"
    assert numbers["latency@rep60a/deberta/cpu/native/launches"] == "3/3"
    assert not any(value == "1.0" for key, value in numbers.items() if key.startswith("latency/"))
    assert numbers["batching/electra/cpu/native/naive-b=8/row_ms"] == "1{,}234.5"
    assert numbers["batching/electra/cpu/native/naive-b=8/launches"] == "2/3"
    tex = numbers_tex(numbers)
    assert r"\rmset{batching/electra/cpu/native/naive-b=8/speedup}{0.13}" in tex
    assert r"\newcommand{\rmnum}" in tex


def test_the_fidelity_numbers_give_each_agreement_with_its_interval_and_what_the_sample_can_show():
    from rmbench.report.paper import fidelity_numbers
    from rmbench.studies.decomposition import with_agreement_interval

    gate = {"model": "m", "min_agreement": 0.99, "gate": "failed"}
    gates = [
        gate
        | {"step": "ort_python precision=int8", "set": "a", "headline": True, "pairs": 60, "flipped": 1}
        | {"speedup_vs_ort_fp32": 2.081, "conservative_vs_ort_fp32": 1.497},
        gate | {"step": "native precision=int8", "set": "a", "headline": True, "pairs": 60, "flipped": 0},
        gate | {"step": "native precision=int8", "set": "b", "headline": False, "pairs": 150, "flipped": 0},
    ]
    table = with_agreement_interval(
        pd.DataFrame([g | {"preference_agreement": 1 - g["flipped"] / g["pairs"]} for g in gates])
    )
    numbers = fidelity_numbers(table)
    assert numbers["fidelity/m/ort_python-precision=int8/agreement"] == "98.3"
    # bounds to two places, as the table prints them: 99.96 is not 100, nor 98.96 a 99
    assert numbers["fidelity/m/ort_python-precision=int8/agreement_lo"] == "91.06"
    assert numbers["fidelity/m/ort_python-precision=int8/agreement_hi"] == "99.96"
    # the speed-up and its conservative bound (CI against CI); none where a step was not timed
    assert numbers["fidelity/m/ort_python-precision=int8/speedup_vs_ort_fp32"] == "2.08"
    assert numbers["fidelity/m/ort_python-precision=int8/conservative_vs_ort_fp32"] == "1.50"
    assert "fidelity/m/native-precision=int8/conservative_vs_ort_fp32" not in numbers
    # what the headline set's sample can show, and a set gated besides it under its own name
    assert numbers["fidelity/m/pairs"] == "60" and numbers["fidelity/m/full_agreement_lo"] == "94.0"
    assert numbers["fidelity/m/pairs_to_show"] == "368" and numbers["fidelity/m/min_agreement"] == "99"
    assert numbers["fidelity/m/native-precision=int8/agreement_lo"] == "94.04"
    assert numbers["fidelity@b/m/native-precision=int8/agreement_lo"] == "97.57"
    assert numbers["fidelity@b/m/pairs"] == "150" and numbers["fidelity@b/m/full_agreement_lo"] == "97.6"


def test_the_int8_sweep_gives_its_count_of_passed_settings_and_best_agreement():
    sweep = pd.DataFrame(
        [
            {"model": "electra", "matmuls": "all", "preference_agreement": 0.8667, "gate": "failed"},
            {"model": "electra", "matmuls": "ffn", "preference_agreement": 0.995, "gate": "passed"},
            {"model": "electra", "matmuls": "attention", "preference_agreement": 0.7, "gate": "failed"},
        ]
    )
    numbers = paper_numbers({"int8_sweep": sweep}, {})
    assert numbers["int8_sweep/electra/passed"] == "1" and numbers["int8_sweep/electra/settings"] == "3"
    assert numbers["int8_sweep/electra/best_agreement"] == "99.5"
    assert numbers["int8_sweep/electra/worst_agreement"] == "70.0"
    assert numbers["int8_sweep/electra/best_matmuls"] == "ffn"


def test_the_batch_operator_profile_gives_its_ratios_and_the_operator_that_adds_most():
    from rmbench.probes.operators import batch_operator_table

    def profile(batch, ms):
        return {"batch": batch, "operators": [{"op_type": op, "ms_per_row": v} for op, v in ms.items()]}

    alone = {"MatMul": 6.0, "MatMulInteger": 2.0, "Softmax": 1.0}
    batched = {"MatMul": 5.0, "MatMulInteger": 2.0, "Softmax": 4.0}
    table = batch_operator_table(
        {
            ("deberta", "none"): {1: profile(1, alone), 8: profile(8, batched)},
            ("deberta", "relative_shift"): {1: profile(1, alone), 8: profile(8, alone)},
        }
    )
    numbers = paper_numbers({"batch_operators": table}, {})
    assert numbers["batch_operators/deberta/optimizer=relative_shift/total_ratio"] == "1.00"
    assert "batch_operators/deberta/run_ratio" not in numbers  # not profiled here
    assert numbers["batch_operators/deberta/batch"] == "8"
    assert numbers["batch_operators/deberta/total_ratio"] == "1.22"  # 11 / 9 ms per row
    assert numbers["batch_operators/deberta/matrix_ratio"] == "0.88"  # 7 / 8: both matrix products
    assert numbers["batch_operators/deberta/top_op"] == "Softmax"
    assert numbers["batch_operators/deberta/top_extra_ms"] == "3.00"
    assert numbers["batch_operators/deberta/top_share"] == "150"  # of the +2 ms: Softmax +3, MatMul -1


def test_the_pytorch_batch_operator_profile_gives_each_operator_and_the_weight_products_rate():
    from rmbench.probes.operators import batch_operator_table

    def profile(batch, ms, work):
        operators = [{"op_type": op, "ms_per_row": v} for op, v in ms.items()]
        return {"batch": batch, "operators": operators, "call_ms_per_row": 20.0 / batch**0.1} | {
            "work_gflop_per_row": {"aten::addmm": work}
        }

    alone = {"aten::addmm": 10.0, "aten::_softmax": 1.0}
    batched = {"aten::addmm": 6.0, "aten::_softmax": 2.0}
    table = batch_operator_table(
        {("deberta", "hf_eager"): {1: profile(1, alone, 3.0), 8: profile(8, batched, 2.4)}}, by="runtime"
    )
    numbers = paper_numbers({"torch_batch_operators": table}, {})
    key = "torch_batch_operators/deberta/hf_eager"
    assert numbers[f"{key}/op/aten::_softmax/ratio"] == "2.00"
    assert numbers[f"{key}/top_op"] == r"aten::\_softmax"  # typeset as it reads
    assert numbers[f"{key}/op/aten::addmm/work_ratio"] == "0.80"  # 2.4 / 3.0 GFLOP per row
    assert numbers[f"{key}/op/aten::addmm/gflops_alone"] == "300"
    assert numbers[f"{key}/op/aten::addmm/rate_ratio"] == "1.33"  # 400 / 300 GFLOP/s
    assert numbers[f"{key}/run_ratio"] == "0.81"  # the whole call: 8^-0.1
    assert f"{key}/op/aten::_softmax/gflops_alone" not in numbers  # its work is not known


def test_the_language_comparison_gives_its_difference_interval_and_equivalence():
    from rmbench.report.tables import language_table
    from rmbench.stats.across_launches import compare_latency

    launches = pd.DataFrame(
        [
            {"model": "electra", "device": "cpu", "set": "main60", "variant": "-", "runtime": runtime}
            | {"status": "ok", "p50_ms": value}
            | {"launch": launch}
            for runtime, values in (("native", [70.3, 68.4, 72.7]), ("ort_python", [73.6, 74.5, 75.1]))
            for launch, value in enumerate(values, 1)
        ]
    )
    cell = ["model", "device", "set", "variant"]
    comparisons = compare_latency(launches, cell, "runtime", "p50_ms")
    row = {"model": "electra", "device": "cpu", "set": "main60", "variant": "-"}
    per_row = {"row_difference_ms": -2.991, "row_difference_ms_lo": -4.78, "row_difference_ms_hi": 0.5}
    per_row |= {"tokenize_difference_ms": -0.776, "tokenize_difference_ms_lo": -0.803}
    per_row |= {
        "tokenize_difference_ms_hi": -0.746,
        "native_tokenize_us": 90.2,
        "ort_python_tokenize_us": 1023.4,
    }
    differences = pd.DataFrame([row | per_row])
    numbers = paper_numbers({"language": language_table(comparisons, differences)}, {})
    assert numbers["language/electra/cpu/p50_ms/difference_pct"] == "$-$5.3"  # 70.47 / 74.40 - 1
    lo, hi = numbers["language/electra/cpu/p50_ms/difference_ci"].strip("[]").split(", ")
    assert lo.startswith("$-$") and float(lo[3:]) > 5.3 and hi.startswith("$-$")
    assert numbers["language/electra/cpu/p50_ms/equivalence"] == "not shown"
    # paired by launch: the log ratios' t interval, back as a ratio
    assert numbers["language/electra/cpu/p50_ms/paired_ci"] == "[$-$9.6, $-$0.8]"
    assert numbers["language/electra/cpu/p50_ms/paired_equivalence"] == "not shown"
    assert numbers["language/electra/cpu/p50_ms/pairs"] == "3"
    # native 5.3% faster in the mean log ratio: beyond the 3% margin, no number of pairs shows it
    assert numbers["language/electra/cpu/p50_ms/pairs_needed"] == "more than 1{,}000"
    assert numbers["language/electra/cpu/row_difference_ms"] == "$-$2.99"
    assert numbers["language/electra/cpu/row_difference_ci"] == "[$-$4.78, +0.50]"
    assert numbers["language/electra/cpu/tokenize_difference_ci"] == "[$-$0.80, $-$0.75]"
    assert numbers["language/electra/cpu/ort_python/tokenize_us"] == "1{,}023"
    assert "language/electra/cpu/infer_difference_ms" not in numbers  # launches that did not time it
    # no sign on a zero difference, nor "-0.0"
    zero = language_table(comparisons.assign(candidate_mean=74.4003))
    assert paper_numbers({"language": zero}, {})["language/electra/cpu/p50_ms/difference_pct"] == "0.0"


def test_the_log_names_the_quoted_numbers_a_run_has_no_value_for():
    text = [
        r"native took \rmnum{latency/deberta/cpu/native/p50_ms} ms",
        r"(\rmnum{host/cpu}, \rmnum{host/cuda})",
    ]
    quoted = quoted_keys(text)
    assert quoted == {"latency/deberta/cpu/native/p50_ms", "host/cpu", "host/cuda"}
    report = unmeasured_report(quoted, {"latency/deberta/cpu/native/p50_ms": "92.5", "host/cpu": "Xeon"})
    assert report.splitlines() == [
        "1 of the 3 numbers the text quotes have no value in this run (printed as ??):",
        "  host/cuda",
    ]
    assert "every one of the 3" in unmeasured_report(quoted, dict.fromkeys(quoted, "1"))


def test_every_number_the_paper_quotes_names_a_table_and_a_model_of_the_experiment():
    """A typo in a key would print as ?? in every run; this catches the ones a key's shape shows."""
    texts = [p.read_text() for p in text_files(ROOT)]
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    models, sets = set(config["models"]), set(config["sets"])
    quoted = quoted_keys(texts)
    assert len(quoted) > 100  # the text quotes its numbers (a broken pattern would find none)
    for key in quoted:
        table, *rest = key.split("/")
        table, _, sample_set = table.partition("@")  # study@set: a replication set's cells
        if table == "tier":  # which tier the run's config is: paper or extended
            continue
        assert table in {*STUDIES, *DERIVED, "host"}, key
        # the fidelity table's pooled gate is over every gated set, not one of them
        assert not sample_set or sample_set in sets or (table, sample_set) == ("fidelity", POOLED_SET), key
        assert table == "host" or rest[0] in models, key


def test_a_paper_tier_run_reads_the_text_without_what_only_the_extended_tier_prints(tmp_path):
    from rmbench.report.paper import printed_text

    (tmp_path / "main.tex").write_text("\\input{sections/a}\n\\ifrmextended\\input{sections/deep}\\fi\n")
    (tmp_path / "a.tex").write_text("\\rmnum{latency/x} and\n\\ifrmextended\\rmnum{gemm/y}\n\\fi{} done")
    (tmp_path / "deep.tex").write_text("\\rmnum{decomposition/z}")
    files = [tmp_path / name for name in ("main.tex", "a.tex", "deep.tex")]
    assert quoted_keys(printed_text(files, "paper")) == {"latency/x"}
    assert quoted_keys(printed_text(files, "extended")) == {"latency/x", "gemm/y", "decomposition/z"}
    # the paper's own text: the paper tier quotes fewer numbers, every one of them among all
    paper, extended = (quoted_keys(printed_text(text_files(ROOT), tier)) for tier in ("paper", "extended"))
    assert paper < extended and not any(
        key.startswith(("decomposition/", "gemm/", "fidelity")) for key in paper
    )
