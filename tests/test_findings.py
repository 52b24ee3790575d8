"""Derived findings on small fixed inputs: FLOP counts, replication flags and the roofline."""

import math

import pandas as pd
import pytest
from rmbench.probes.flops import encoder_flops, relative_projection_flops, weight_gemm_flops
from rmbench.probes.roofline import (
    AT_CEILING,
    MATRIX_BELOW,
    OUTSIDE_KERNELS,
    ceiling_gap_table,
    ceilings,
    roofline_table,
)
from rmbench.report.findings import replication_lines
from rmbench.report.latex import ceiling_gap_latex
from rmbench.stats.replication import replication_table

# config.json values: the class names the family, whose feed-forward has two matrices
BERT = {
    "hidden_size": 4,
    "intermediate_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "architectures": ["ElectraForSequenceClassification"],
}


def test_encoder_flops_by_hand():
    # per layer: projections 4*2*10*4*4 = 1280, FFN 2*2*10*4*8 = 1280, attention 2*2*10*10*4 = 1600
    assert encoder_flops(BERT, 10) == 2 * (1280 + 1280 + 1600)
    deberta = BERT | {"relative_attention": True, "position_buckets": 256, "pos_att_type": ["p2c", "c2p"]}
    # plus c2p and p2c scores against the 2*10-1 distances a row of 10 has: 2 * (2*10*19*4)
    assert encoder_flops(deberta, 10) == 2 * (4160 + 2 * 1520)
    # a row with more distances (599) than the 2k = 512 embeddings: those bound it
    assert encoder_flops(deberta, 300) == 2 * (38400 + 38400 + 1440000 + 2 * (2 * 300 * 512 * 4))


def test_relative_projection_flops_once_per_call_by_hand():
    """DeBERTa-v3 projects its 2k relative-position embeddings with the shared query and key
    projections in every layer: 2 x 2 x 2k x H x H per layer, whatever the row."""
    deberta = BERT | {"relative_attention": True, "position_buckets": 256, "share_att_key": True}
    assert relative_projection_flops(deberta) == 2 * (2 * 2 * 512 * 4 * 4)
    # without shared projections, one per position term; none without relative attention
    own = deberta | {"share_att_key": False, "pos_att_type": ["c2p"]}
    assert relative_projection_flops(own) == 2 * (1 * 2 * 512 * 4 * 4)
    assert relative_projection_flops(BERT) == 0.0
    # the weight products alone: projections and FFN, no attention scores
    assert weight_gemm_flops(deberta, 10) == 2 * (1280 + 1280)


def test_a_batch_shares_the_relative_projections_and_nothing_else():
    from rmbench.probes.torch_operators import weight_gemm_work

    deberta = BERT | {"relative_attention": True, "position_buckets": 256, "share_att_key": True}
    per_row, shared = weight_gemm_flops(deberta, 10) / 1e9, relative_projection_flops(deberta) / 1e9
    assert weight_gemm_work(deberta, [10, 10], 1) == pytest.approx(per_row + shared)
    assert weight_gemm_work(deberta, [10, 10], 8) == pytest.approx(per_row + shared / 8)
    # ELECTRA-like: nothing shared, the same work per row in any batch
    assert weight_gemm_work(BERT, [10, 30], 8) == pytest.approx(weight_gemm_work(BERT, [10, 30], 1))


def comparison(model, set_name, verdict, speedup=2.0, candidate="native"):
    return {
        "model": model,
        "device": "cpu",
        "set": set_name,
        "metric": "p50_ms",
        "candidate": candidate,
        "baseline": "hf_eager",
        "verdict": verdict,
        "speedup": speedup,
        "n_candidate": 5,
        "n_baseline": 3,
    }


def test_a_flipped_verdict_is_flagged_with_who_disagreed():
    comparisons = pd.DataFrame(
        [
            comparison("deberta", "main60", "faster"),
            comparison("deberta", "rep60a", "faster"),
            comparison("deberta", "set150", "not distinguishable", 1.1),
            comparison("electra", "main60", "faster"),
            comparison("electra", "rep60a", "faster"),
            comparison("electra", "main60", "slower", 0.8, candidate="ort_python"),
        ]
    )
    table = replication_table(comparisons, "main60").set_index(["model", "candidate"])
    deberta = table.loc[("deberta", "native")]
    assert deberta["reproduced"] == "not confirmed" and deberta["disagreeing"] == "set150"
    assert "set150: not distinguishable (1.10x, 5+3 launches)" in deberta["replications"]
    electra = table.loc[("electra", "native")]
    assert electra["reproduced"] == "yes" and electra["checked_on"] == 2  # rep60a and deberta
    assert table.loc[("electra", "ort_python")]["reproduced"] == "not checked"
    assert "host" in table and not table["across_hosts"].any()  # no host recorded: none to compare


def test_a_replication_in_the_opposite_direction_contradicts_and_a_missed_difference_does_not():
    from rmbench.stats.replication import replication_outcome

    assert replication_outcome("faster", ["faster", "faster"]) == "yes"
    assert replication_outcome("faster", ["faster", "not distinguishable"]) == "not confirmed"
    assert replication_outcome("not distinguishable", ["slower"]) == "not confirmed"
    assert replication_outcome("faster", ["not distinguishable", "slower"]) == "no"
    assert replication_outcome("slower", []) == "not checked"
    table = replication_table(
        pd.DataFrame(
            [
                comparison("deberta", "main60", "faster"),
                comparison("deberta", "rep60a", "slower", 0.9),
                comparison("electra", "main60", "faster"),
            ]
        ),
        "main60",
    ).set_index("model")
    assert table.loc["deberta", "reproduced"] == "no" and table.loc["deberta", "disagreeing"] == "rep60a"
    lines = replication_lines(table.reset_index(), "hf_eager")
    assert lines[0].startswith(
        "- 1 of 2 verdicts against hf_eager reproduced, 0 not confirmed, 1 contradicted"
    )
    assert lines[1].startswith(
        "- contradicted: deberta p50_ms native vs hf_eager (faster on the headline set"
    )


def test_a_verdict_checked_on_another_kind_of_host_says_so():
    amx, avx2 = "Intel Xeon, AMX, 2 CPUs", "AMD EPYC, AVX2, 2 CPUs"
    comparisons = pd.DataFrame(
        [
            comparison("deberta", "main60", "faster") | {"host": amx},
            comparison("deberta", "set150", "faster") | {"host": avx2},
            comparison("electra", "main60", "faster") | {"host": amx},
        ]
    )
    table = replication_table(comparisons, "main60").set_index("model")
    assert table.loc["deberta", "across_hosts"] and table.loc["deberta", "host"] == f"{avx2}; {amx}"
    assert not table.loc["electra", "across_hosts"] and table.loc["electra", "host"] == amx


def test_roofline_compares_the_mean_achieved_rate_with_the_best_library():
    launches = pd.DataFrame(
        {
            "model": ["m"] * 3,
            "runtime": ["native", "native", "hf_eager"],
            "set": ["main60"] * 3,
            "device": ["cpu"] * 3,
            "status": ["ok", "ok", "ok"],
            "gflops": [10.0, 12.0, 5.0],
            "threads": [2, 2, 2],
        }
    )
    gemm = pd.DataFrame(
        {
            "model": ["m", "m"],
            "runtime": ["torch", "onnxruntime"],
            "launches_ok": [3, 3],
            "gflops": [20.0, 40.0],
        }
    )
    table = roofline_table(launches, gemm, "main60").set_index("runtime")
    assert table.loc["native", "ceiling_library"] == "onnxruntime"
    assert table.loc["native", "fraction_of_ceiling"] == pytest.approx(11 / 40)
    # a batch variant's faster GEMMs are not a row's ceiling
    batch = pd.DataFrame({"model": ["m"], "runtime": ["torch"], "launches_ok": [3], "gflops": [90.0]})
    variants = pd.concat([gemm.assign(variant="-"), batch.assign(variant="batch~8")])
    with_batch = roofline_table(launches, variants, "main60").set_index("runtime")
    assert with_batch.loc["native", "ceiling_gflops"] == 40.0 and ceilings(variants)["m"] == (
        "onnxruntime",
        40.0,
    )
    assert table.loc["native", "achieved_lo"] < 11 < table.loc["native", "achieved_hi"]
    assert math.isnan(table.loc["hf_eager", "achieved_lo"])  # one launch: no interval


def test_roofline_gives_the_in_launch_fraction_its_interval_where_launches_probed():
    launches = pd.DataFrame(
        {
            "model": ["m"] * 5,
            "runtime": ["native"] * 3 + ["hf_eager"] * 2,
            "set": ["main60"] * 5,
            "device": ["cpu"] * 5,
            "status": ["ok", "ok", "mismatch", "ok", "ok"],
            "gflops": [10.0, 12.0, 99.0, 5.0, 5.0],
            "threads": [2] * 5,
            # the machine slowed down between the launches: the probed ceiling followed
            "ceiling_gflops": [20.0, 30.0, 99.0, math.nan, math.nan],
            "ceiling_tokens": [100, 100, 100, math.nan, math.nan],
            "fraction_of_ceiling": [0.5, 0.4, 1.0, math.nan, math.nan],
        }
    )
    gemm = pd.DataFrame({"model": ["m"], "runtime": ["numpy"], "launches_ok": [3], "gflops": [40.0]})
    table = roofline_table(launches, gemm, "main60").set_index("runtime")
    native = table.loc["native"]
    assert native["probe_launches"] == 2 and native["probed_ceiling_gflops"] == 25.0  # ok launches only
    assert native["fraction_in_launch"] == pytest.approx(0.45)
    assert native["fraction_in_launch_lo"] < 0.45 < native["fraction_in_launch_hi"]
    # two launches' t-interval reaches below 0; a share does not
    assert native["fraction_in_launch_lo"] == 0.0
    assert native["fraction_of_ceiling"] == pytest.approx(11 / 40)  # the gemm study's, as before
    assert math.isnan(table.loc["hf_eager", "fraction_in_launch"])  # not probed: no number made up


def test_gap_table_takes_the_in_launch_fraction_by_step():
    from rmbench.probes.roofline import in_launch_fractions
    from rmbench.report.latex import gap_latex
    from rmbench.studies.decomposition import gap_table

    steps = ["hf_eager precision=fp32", "ort_python graph=all"]
    summary = pd.DataFrame(
        [
            {"model": "m", "device": "cpu", "set": "s", "step": step, "launches_ok": 2, "gflops": g}
            | {"p50_ms": p50, "p50_ms_lo": p50 - 1, "p50_ms_hi": p50 + 1}
            for step, p50, g in [(steps[0], 100.0, 20.0), (steps[1], 50.0, 40.0)]
        ]
    )
    launches = pd.DataFrame(
        {
            "model": ["m"] * 2,
            "step": [steps[1]] * 2,
            "status": ["ok"] * 2,
            "ceiling_gflops": [45.0, 55.0],
            "ceiling_tokens": [10, 10],
            "fraction_of_ceiling": [0.8, 0.9],
        }
    )
    probed = in_launch_fractions(launches, ["model", "step"])
    gap = gap_table(summary, steps[0], {"m": ("numpy", 80.0)}, probed).set_index("step")
    assert gap.loc[steps[1], "fraction_in_launch"] == pytest.approx(0.85)
    assert gap.loc[steps[1], "fraction_of_ceiling"] == 0.5
    assert math.isnan(gap.loc[steps[0], "fraction_in_launch"])
    latex = gap_latex(gap.reset_index(), "s")
    assert r"85\% [" in latex and r"25\%" in latex  # probed where it was, the gemm study's elsewhere


@pytest.mark.parametrize("library", ["torch", "onnxruntime", "numpy"])
def test_gemm_launch_times_every_layer_matmul(tiny_model, library):
    from rmbench.probes.gemm import run_gemm_launch

    cell = {
        "study": "gemm",
        "model": "tiny",
        "device": "cpu",
        "runtime": library,
        "params": "set~t",
        "launch": 1,
    }
    record = run_gemm_launch(cell, tiny_model["model"], {"threads": 1, "tokens": 16})
    m = record["metrics"]
    assert record["status"] == "ok" and set(m["shapes"]) == {
        "query",
        "key",
        "value",
        "attention_output",
        "ffn_up",
        "ffn_down",
    }
    assert m["shapes"]["ffn_up"]["k"] == 32 and m["shapes"]["ffn_up"]["n"] == 64  # the tiny model's H, I
    flops = 2 * 16 * (4 * 32 * 32 + 2 * 32 * 64)
    assert m["gflops"] == pytest.approx(flops / m["layer_ms"] / 1e6)
    # a batch variant: the GEMMs of 3 rows at once
    batched = run_gemm_launch(
        cell | {"params": "set~t+batch~3"}, tiny_model["model"], {"threads": 1, "tokens": 16}
    )
    assert {s["m"] for s in batched["metrics"]["shapes"].values()} == {48}
    shorter = run_gemm_launch(
        cell | {"params": "set~t+tokens~5"}, tiny_model["model"], {"threads": 1, "tokens": 16}
    )
    assert {s["m"] for s in shorter["metrics"]["shapes"].values()} == {5}


def test_study_tables_mark_a_verdict_that_did_not_reproduce():
    from rmbench.plan.studies import STUDIES
    from rmbench.report.latex import study_latex
    from rmbench.report.tables import group_keys, study_table
    from rmbench.stats.across_launches import compare_latency, summarize

    values = {  # row_ms per launch: naive b=8 clearly slower on main60, not on set150
        ("main60", "batching~none+batch~1"): [10.0, 10.2, 9.9],
        ("main60", "batching~naive+batch~8"): [30.0, 30.5, 29.8],
        ("set150", "batching~none+batch~1"): [10.0, 14.0, 6.0],
        ("set150", "batching~naive+batch~8"): [11.0, 15.0, 7.0],
    }
    launches = pd.DataFrame(
        [
            {"model": "electra", "device": "cpu", "set": s, "variant": v, "runtime": "native"}
            | {"status": "ok", "reason": "", "order": i, "row_ms": x, "throughput_rps": 1e3 / x}
            | {"padding_waste": 0.1, "batch_p50_ms": x, "batch_p95_ms": x}
            for (s, v), xs in values.items()
            for i, x in enumerate(xs)
        ]
    )
    keys, metrics = group_keys("batching"), STUDIES["batching"]["metrics"]
    summary = summarize(launches, [*keys, "variant"], metrics)
    comparisons = compare_latency(launches, keys, "variant", "row_ms")
    table = study_table(summary, comparisons, "batching", "batching~none+batch~1", "main60")
    naive = table[(table.set == "main60") & (table.variant == "batching~naive+batch~8")].iloc[0]
    assert naive["verdict"] == "slower" and naive["reproduced"] == "not confirmed"
    assert naive["disagreeing"] == "set150"
    assert table[table.set == "set150"]["reproduced"].isna().all()  # flags belong to the headline set
    latex = study_latex(table, "batching", "batching~none+batch~1", "Batching.", "tab:batching")
    assert r"slower$^\ddagger$" in latex and "not reproduced" in latex


AMX = {"cpu": "Intel Xeon", "cpu_flags": ["avx2", "avx512f", "amx_tile"], "usable_cpus": 2}
AVX2 = {"cpu": "AMD EPYC", "cpu_flags": ["avx2"], "usable_cpus": 2}
AMX_HOST, AVX2_HOST = "Intel Xeon, AMX, 2 CPUs", "AMD EPYC, AVX2, 2 CPUs"


def test_tables_from_probe_records_name_the_hosts_the_probes_ran_on():
    from rmbench.probes.thread_probe import thread_table
    from rmbench.report.latex import thread_latex
    from rmbench.report.tables import with_record_hosts

    result = {"name": "intra_all-sequential-inter_1", "threads_used": 2, "batch": 8, "rows": 4}
    result |= {"alone_ms_per_row": 10.0, "batched_ms_per_row": 9.0}
    records = [
        {"model": "deberta", "results": [result], "provenance": AMX},
        {"model": "electra", "results": [result], "provenance": AMX},
    ]
    table = with_record_hosts(thread_table({r["model"]: r["results"] for r in records}), records)
    assert list(table["host"]) == [AMX_HOST, AMX_HOST]
    assert thread_latex(table).count(f"Measured on {AMX_HOST}.") == 1
    # one model probed on another kind of machine too: both named; a record without provenance names none
    records.append({"model": "electra", "results": [result], "provenance": AVX2})
    records.append({"model": "deberta", "results": [result]})
    table = with_record_hosts(table.drop(columns="host"), records)
    assert list(table["host"]) == [AMX_HOST, f"{AVX2_HOST}; {AMX_HOST}"]
    assert f"Measured on {AVX2_HOST} and {AMX_HOST}." in thread_latex(table)
    unrecorded = with_record_hosts(thread_table({"m": [result]}), [{"model": "m", "results": [result]}])
    assert list(unrecorded["host"]) == [""] and "Measured on" not in thread_latex(unrecorded)


def test_gate_tables_name_the_hosts_of_the_gates_and_of_the_launches_timed_against_them():
    from rmbench.report.latex import fidelity_latex, sweep_latex
    from rmbench.studies.decomposition import fidelity_table, sweep_table

    gate = {"pairs": 60, "flipped": 1, "mean_abs_delta": 0.1, "max_abs_delta": 0.3, "fp32_median_margin": 0.2}
    gate |= {"preference_agreement": 0.98, "passed": False, "min_agreement": 0.99, "model": "m"}
    settings = {"weight_type": "qint8", "per_channel": False, "reduce_range": False, "matmuls": "all"}
    sweep = sweep_table([gate | {"settings": settings, "quantized_matmuls": 8, "provenance": AVX2}], [])
    assert list(sweep["host"]) == [AVX2_HOST] and f"Gates ran on {AVX2_HOST}." in sweep_latex(sweep, 0.99)
    # the gate on one machine, its speed-up's launches on another: both named
    report = gate | {"runtime": "native", "params": "set~s+precision~int8", "provenance": AVX2}
    comparison = {"model": "m", "device": "cpu", "set": "s", "metric": "p50_ms", "speedup": 1.5}
    comparison |= {"candidate": "native precision=int8", "baseline": "ort_python graph=all", "host": AMX_HOST}
    comparison |= {"speedup_conservative": 1.2, "verdict": "faster"}
    fidelity = fidelity_table([report], pd.DataFrame([comparison]), "s")
    assert fidelity["host"].iloc[0] == f"{AVX2_HOST}; {AMX_HOST}"
    assert f"Gates and launches ran on {AVX2_HOST} and {AMX_HOST}." in fidelity_latex(fidelity, 0.99)
    # an old gate record without provenance, no comparison found: no host, no sentence
    old = fidelity_table([report | {"provenance": None}], pd.DataFrame([comparison | {"set": "t"}]), "s")
    assert old["host"].iloc[0] == "" and "ran on" not in fidelity_latex(old, 0.99)


def test_roofline_and_gap_tables_name_their_hosts():
    from rmbench.report.latex import gap_latex
    from rmbench.studies.decomposition import gap_table

    launches = pd.DataFrame(
        {"model": ["m"] * 2, "runtime": ["native"] * 2, "set": ["main60"] * 2, "device": ["cpu"] * 2}
        | {"status": ["ok"] * 2, "gflops": [10.0, 12.0], "threads": [2, 2], "host": [AMX_HOST] * 2}
    )
    gemm = pd.DataFrame({"model": ["m"] * 2, "runtime": ["numpy", "torch"], "launches_ok": [3, 3]})
    gemm = gemm.assign(gflops=[40.0, 20.0], host=[AVX2_HOST, "never used"])
    roofline = roofline_table(launches, gemm, "main60")
    assert roofline["host"].iloc[0] == f"{AVX2_HOST}; {AMX_HOST}"  # the launches' and the ceiling's
    steps = ["hf_eager precision=fp32", "ort_python graph=all"]
    summary = pd.DataFrame(
        [
            {"model": "m", "device": "cpu", "set": "s", "step": step, "launches_ok": 2, "gflops": 20.0}
            | {"p50_ms": p50, "p50_ms_lo": p50 - 1, "p50_ms_hi": p50 + 1, "host": AMX_HOST}
            for step, p50 in [(steps[0], 100.0), (steps[1], 50.0)]
        ]
    )
    gap = gap_table(summary, steps[0])
    assert set(gap["host"]) == {AMX_HOST} and f"Launches ran on {AMX_HOST}." in gap_latex(gap, "s")


def test_the_best_cpu_runtime_against_the_baseline_and_the_runner_up():
    """Three runtimes on two models: a clear winner on one, a tie at the top on the other; GPU
    cells and other sets do not compete."""
    from rmbench.report.findings import best_runtime_lines
    from rmbench.report.tables import best_runtime_table
    from rmbench.stats.across_launches import compare_latency, summarize

    drift = [1.00, 1.10, 0.95, 1.05, 1.02]  # the machine's speed by round, shared by a round's cells
    means = {
        ("a", "hf_eager"): 200.0, ("a", "ort"): 150.0, ("a", "fast"): 100.0,
        ("b", "hf_eager"): 200.0, ("b", "ort"): 100.0, ("b", "fast"): 99.8,
    }  # fmt: skip
    rows = []
    for (model, runtime), mean in means.items():
        for launch, shift in enumerate(drift, start=1):
            jitter = 1 + 0.002 * (-1) ** (launch + (runtime == "fast"))  # noise within a round
            for device, set_name, factor in (
                ("cpu", "main", 1.0),
                ("cuda", "main", 0.01),
                ("cpu", "other", 0.5),
            ):
                rows.append(
                    {"model": model, "device": device, "set": set_name, "variant": "-", "runtime": runtime}
                    | {
                        "launch": launch,
                        "status": "ok",
                        "reason": "",
                        "p50_ms": mean * shift * jitter * factor,
                        "host": "h",
                    }
                )
    launches = pd.DataFrame(rows)
    keys = ["model", "device", "set", "variant"]
    summary = summarize(launches, [*keys, "runtime"], ["p50_ms"])
    comparisons = compare_latency(launches, keys, "runtime", "p50_ms")
    best = best_runtime_table(summary, comparisons, "hf_eager", "main").set_index("model")
    assert list(best.index) == ["a", "b"] and (best["best"] == "fast").all()
    assert best.loc["a", "runner_up"] == "ort" and best.loc["a", "over_baseline"] == pytest.approx(
        2.0, rel=1e-3
    )
    assert best.loc["a", "over_runner_up"] == pytest.approx(1.5, rel=1e-3)
    assert best.loc["a", "over_runner_up_shows"] == "faster (CIs apart)"
    # pairing by round takes the drift out: a narrow interval around 2
    assert (
        1.95 < best.loc["a", "over_baseline_paired_lo"] < 2 < best.loc["a", "over_baseline_paired_hi"] < 2.05
    )
    assert best.loc["a", "over_baseline_paired"] == pytest.approx(2.0, rel=1e-3)
    assert best.loc["b", "over_runner_up_shows"] == "tied (equivalence shown)"
    lines = best_runtime_lines(best.reset_index(), "hf_eager")
    assert lines[1].startswith("- b: fast (5 launches); 2.00x over hf_eager")
    assert "over ort" in lines[1] and lines[1].endswith("tied (equivalence shown)")

    # The launches probed the GEMM ceiling: the best runtime's mean share of it in its own
    # launches, on the headline set's CPU cells only; the LaTeX table gets a column for it.
    from rmbench.probes.roofline import in_launch_fractions
    from rmbench.report.latex import best_runtime_latex

    launches["ceiling_gflops"] = 400.0
    launches["ceiling_tokens"] = 160
    launches["fraction_of_ceiling"] = [0.9 if r == "fast" else 0.5 for r in launches["runtime"]]
    launches.loc[launches["set"] == "other", "fraction_of_ceiling"] = 0.1
    headline_cpu = launches[(launches["set"] == "main") & (launches["device"] == "cpu")]
    probed = in_launch_fractions(headline_cpu, ["model", "runtime"])
    shares = best_runtime_table(summary, comparisons, "hf_eager", "main", probed=probed)
    assert shares["of_ceiling"].tolist() == pytest.approx([0.9, 0.9])
    assert (shares["probed_ceiling_gflops"] == 400.0).all()
    assert r"90\% [90, 90] of 400 GFLOP/s" in best_runtime_latex(shares, "hf_eager", "main")
    assert "Of the ceiling" not in best_runtime_latex(best.reset_index(), "hf_eager", "main")
    assert best_runtime_lines(shares, "hf_eager")[0].endswith(
        "; 90% [90, 90] of the 400 GFLOP/s GEMM ceiling probed in its launches"
    )


def test_a_cell_without_ok_launches_is_worded_as_such_not_as_the_baseline():
    from rmbench.report.findings import latency_lines

    common = {
        "model": "m",
        "set": "main",
        "device": "cpu",
        "speedup_paired": 1.2,
        "speedup_paired_lo": 1.1,
        "speedup_paired_hi": 1.3,
    }
    table = pd.DataFrame(
        [
            common
            | {"runtime": "hf_eager", "launches_ok": 3, "launches": 3, "p50_ms": 200.0}
            | {"speedup": math.nan, "verdict": math.nan, "note": ""},
            common
            | {"runtime": "fast", "launches_ok": 3, "launches": 3, "p50_ms": 100.0}
            | {"speedup": 2.0, "verdict": "faster", "note": ""},
            common
            | {"runtime": "gone", "launches_ok": 0, "launches": 3, "p50_ms": math.nan}
            | {"speedup": math.nan, "verdict": math.nan, "note": "not installed"},
        ]
    )
    assert latency_lines(table, "main") == [
        "- m, hf_eager: p50 200.0 ms (the baseline)",
        "- m, fast: p50 100.0 ms, 2.00x the baseline, paired by round 1.20x [1.10, 1.30], faster (CIs apart; 3 launches)",
        "- m, gone: no ok launch of 3 (not installed)",
    ]


def test_a_runs_caveat_heads_every_caption_figure_title_and_findings_page(monkeypatch, tmp_path):
    from rmbench.report.caveat import VARIABLE
    from rmbench.report.figures import finish, panel_grid
    from rmbench.report.findings import findings_markdown
    from rmbench.report.latex import booktabs

    def table() -> str:
        return booktabs("l", ["A"], [["1"]], r"Per-row latency, 95\% CI.", "tab:x")

    monkeypatch.delenv(VARIABLE, raising=False)
    plain = table()
    assert r"\caption{Per-row latency, 95\% CI.}" in plain
    monkeypatch.setenv(VARIABLE, "Smoke profile: tiny models; 100% a test.")
    assert r"\caption{Smoke profile: tiny models; 100\% a test. Per-row latency, 95\% CI.}" in table()
    fig, axes = panel_grid(1, 1, 3, 2)
    finish(fig, axes, True, "Latency on main60", tmp_path / "latency.pdf")
    assert fig.get_suptitle() == "Smoke profile: tiny models; 100% a test.\nLatency on main60"
    assert (tmp_path / "latency.png").stat().st_size > 1000
    page = findings_markdown({}, {}, {}, "paper")
    assert page.splitlines()[2] == "**Smoke profile: tiny models; 100% a test.**"


def test_the_ceiling_gap_splits_a_rows_time_into_parts_that_add_up():
    def record(model, call_ms):
        operators = [("MatMul", 60.0), ("Slice", 10.0), ("Add", 5.0), ("Where", 3.0), ("Gemm", 1.0)]
        return {
            "model": model,
            "optimizer": "relative_shift",
            "tokens": 150,
            "gflop_per_row": 10.0,  # 50 ms at the ceiling of 200 GFLOP/s
            "ceiling": {"ceiling_gflops": 200.0},
            "profile": {
                "rows": 30,
                "call_ms_per_row": call_ms,
                "operators": [{"op_type": op, "ms_per_row": ms} for op, ms in operators],
            },
        }

    best = pd.DataFrame(
        [
            {"model": "m", "metric": "p50_ms", "best": "native", "of_ceiling": 0.6}
            | {"of_ceiling_lo": 0.55, "of_ceiling_hi": 0.65},
            {"model": "m", "metric": "p95_ms", "best": "ort_python", "of_ceiling": 0.1}
            | {"of_ceiling_lo": 0.0, "of_ceiling_hi": 0.2},
        ]
    )
    assert ceiling_gap_table([record("m", 85.0)], best, top=1).part.iloc[3] == "the other 2 operator types"
    table = ceiling_gap_table([record("m", 85.0), record("n", 79.0)], best, top=2)
    parts = table[table.model == "m"].set_index("part")["ms_per_row"].to_dict()
    assert parts == {
        AT_CEILING: 50.0,
        MATRIX_BELOW: 11.0,  # MatMul and Gemm: 61 ms for 50 at the ceiling
        "Slice": 10.0,
        "Add": 5.0,
        "Where": 3.0,  # the one left over, by its name
        OUTSIDE_KERNELS: 6.0,  # the call's 85 ms less the kernels' 79
    }
    m = table[table.model == "m"]
    assert math.isclose(m.share.sum(), 1.0) and math.isclose(m.share.iloc[0], 50 / 85)
    assert math.isclose(m.matrix_gflops.iloc[0], 10 / 61e-3)  # at most the ceiling: the FLOP model holds
    assert (m.best_runtime == "native").all() and (m.best_of_ceiling == 0.6).all()  # the p50's best
    n = table[table.model == "n"]
    assert n.best_runtime.isna().all() and math.isclose(n.share.sum(), 1.0)  # no launches: no best
    assert n[n.part == OUTSIDE_KERNELS].ms_per_row.iloc[0] == 0.0
    tex = ceiling_gap_latex(table)
    assert "m (relative shift)" in tex and "native 60\\% [55, 65]" in tex and "200 / 164" in tex
