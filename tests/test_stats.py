"""Statistics against values computed by hand (t table, Welch's formula)."""

import math

import numpy as np
import pandas as pd
import pytest
from rmbench.errors import MixedHostsError
from rmbench.stats.across_launches import (
    Checks,
    Interval,
    coefficient_of_variation,
    compare_latency,
    latency_verdict,
    speedup,
    summarize,
    t_interval,
    welch_p,
)


def test_t_interval_by_hand():
    iv = t_interval([10.0, 12.0, 14.0])  # mean 12, sd 2, t(0.975, 2) = 4.302653
    assert iv.mean == 12.0 and iv.sd == 2.0 and iv.n == 3
    half = 4.302653 * 2 / math.sqrt(3)
    assert iv.lo == pytest.approx(12 - half, rel=1e-6)
    assert iv.hi == pytest.approx(12 + half, rel=1e-6)


def test_t_interval_with_one_value_has_no_bounds():
    iv = t_interval([5.0])
    assert iv.mean == 5.0 and math.isnan(iv.lo) and math.isnan(iv.hi)


def test_welch_by_hand():
    a, b = [1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 7.0]
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 3
    t = (np.mean(a) - np.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 2)
    from scipy import stats

    assert welch_p(a, b) == pytest.approx(2 * stats.t.sf(abs(t), df), rel=1e-9)
    assert math.isnan(welch_p([1.0], b))


def test_verdict_requires_non_overlapping_intervals():
    fast, slow = Interval(300, 280, 320, 5, 1), Interval(600, 550, 650, 3, 1)
    assert latency_verdict(fast, slow) == "faster"
    assert latency_verdict(slow, fast) == "slower"
    assert latency_verdict(Interval(540, 500, 560, 5, 1), slow) == "not distinguishable"
    assert latency_verdict(Interval(5, math.nan, math.nan, 1, 0), slow) == "too few launches"


def test_speedup_point_and_conservative_as_the_study_reports():
    native, eager = Interval(335.9, 297.7, 374.0, 5, 1), Interval(581.6, 551.0, 612.0, 3, 1)
    point, conservative = speedup(native, eager)
    assert point == pytest.approx(581.6 / 335.9)
    assert conservative == pytest.approx(551.0 / 374.0)
    assert math.isnan(speedup(native, Interval(581.6, -3.0, 900, 2, 1))[1])


def test_cv():
    assert coefficient_of_variation([9.0, 10.0, 11.0]) == pytest.approx(0.1)


def test_summarize_and_compare_use_only_ok_launches():
    launches = pd.DataFrame(
        {
            "runtime": ["a"] * 4 + ["b"] * 3,
            "status": ["ok", "ok", "ok", "mismatch", "ok", "ok", "ok"],
            "reason": [""] * 3 + ["bad score"] + [""] * 3,
            "p50_ms": [10.0, 11.0, 12.0, 1.0, 20.0, 21.0, 22.0],
            "model": ["m"] * 7,
        }
    )
    s = summarize(launches, ["model", "runtime"], ["p50_ms"]).set_index("runtime")
    assert s.loc["a", "launches"] == 4 and s.loc["a", "launches_ok"] == 3
    assert s.loc["a", "p50_ms"] == pytest.approx(11.0)
    assert "mismatch:1" in s.loc["a", "statuses"] and s.loc["a", "reasons"] == "bad score"
    c = compare_latency(launches, ["model"], "runtime", "p50_ms")
    row = c[(c.candidate == "a") & (c.baseline == "b")].iloc[0]
    assert row.speedup == pytest.approx(21.0 / 11.0)
    assert row.verdict == "faster"
    assert len(c) == 2


def test_a_cell_that_compiled_while_timed_is_warned_about():
    launches = pd.DataFrame(
        {
            "model": ["m"] * 5,
            "runtime": ["torch_compile"] * 3 + ["hf_eager"] * 2,
            "status": ["ok"] * 5,
            "reason": [""] * 5,
            "row_ms": [10.0, 10.1, 10.2, 12.0, 12.1],
            "timed_compiles": [0, 2, 0, np.nan, np.nan],  # eager launches have no such metric
        }
    )
    s = summarize(launches, ["model", "runtime"], ["row_ms"]).set_index("runtime")
    assert s.loc["torch_compile", "warning"] == "compiled while timed in 1 of 3 launches"
    assert s.loc["hf_eager", "warning"] == ""


def test_agreement_interval_is_clopper_pearson_by_hand():
    from rmbench.stats.across_launches import agreement_interval, pairs_to_show

    # all n agree: the lower bound solves p^n = 0.025, so 60 pairs show 94.04% and no more
    lo, hi = agreement_interval(60, 60)
    assert math.isclose(lo, 0.025 ** (1 / 60), rel_tol=1e-9) and hi == 1.0
    # none agree mirrors it; one flip of 60 leaves 99% inside the interval
    assert math.isclose(agreement_interval(0, 60)[1], 1 - lo, rel_tol=1e-9)
    lo, hi = agreement_interval(59, 60)
    assert lo < 0.99 < hi < 1.0
    assert pairs_to_show(0.99) == 368  # 0.99^368 < 0.025 <= 0.99^367
    assert agreement_interval(368, 368)[0] >= 0.99 > agreement_interval(367, 367)[0]
    assert all(math.isnan(b) for b in agreement_interval(0, 0))


def test_launches_needed_by_hand():
    from rmbench.stats.across_launches import launches_needed

    # mean 100, sd 10: n = 18 gives t(0.975, 17) * 10 / sqrt(18) = 4.973 <= 5; n = 17 gives 5.142
    values = [90.0, 110.0, 100.0, 90.0, 110.0, 100.0]
    values = [100 + 10 * (v - 100) / np.std(values, ddof=1) for v in values]
    assert launches_needed(values, 0.05) == 18
    assert launches_needed([5.0, 5.0, 5.0], 0.05) == 2
    assert math.isnan(launches_needed([1.0], 0.05))


def test_order_trend_and_instability_warnings():
    from rmbench.stats.across_launches import instability_warnings, order_trend_p

    drifting = [100.0, 104.0, 109.0, 115.0, 121.0]
    assert order_trend_p(drifting, [1, 2, 3, 4, 5]) == pytest.approx(2 / 120)  # exact: 2 of 5! orders
    assert order_trend_p(drifting, [3, 1, 5, 2, 4]) > 0.05
    assert order_trend_p([1.0, 2.0, 3.0], [1, 2, 3]) == pytest.approx(1 / 3)  # 3 launches never flag
    assert math.isnan(order_trend_p([1.0, 2.0], [1, 2]))
    warnings = instability_warnings(drifting, [1, 2, 3, 4, 5], Checks(cv_warning=0.05))
    assert len(warnings) == 2 and warnings[0].startswith("CV 8%") and "trend" in warnings[1]
    assert instability_warnings([100.0, 101.0, 100.5], [1, 2, 3], Checks()) == []


def test_bootstrap_speedup_interval_resamples_launches():
    from rmbench.stats.across_launches import bootstrap_speedup

    lo, hi = bootstrap_speedup([10.0, 11.0, 12.0], [20.0, 22.0, 24.0], resamples=2000, seed=1)
    assert lo < 2.0 < hi and lo >= 20 / 12 and hi <= 24 / 10  # within the extreme resample means
    assert bootstrap_speedup([10.0, 10.0], [30.0, 30.0]) == (3.0, 3.0)
    assert all(math.isnan(v) for v in bootstrap_speedup([10.0], [20.0, 21.0]))
    assert bootstrap_speedup([10.0, 11.0, 12.0], [20.0, 22.0, 24.0], seed=1) == bootstrap_speedup(
        [10.0, 11.0, 12.0], [20.0, 22.0, 24.0], seed=1
    )


def test_speedup_of_a_zero_is_undefined_not_an_error():
    zero = Interval(0.0, 0.0, 0.0, 3, 0.0)
    assert all(math.isnan(v) for v in speedup(zero, Interval(5.0, 4.0, 6.0, 3, 1.0)))
    from rmbench.stats.across_launches import bootstrap_speedup

    assert all(math.isnan(v) for v in bootstrap_speedup([0.0, 0.0], [1.0, 2.0]))


def test_equivalence_by_two_one_sided_tests_by_hand():
    from rmbench.stats.across_launches import (
        difference_interval,
        equivalence_verdict,
        launches_for_equivalence,
    )

    a, b = [99.0, 100.0, 101.0], [101.0, 100.0, 99.0]
    # d = 0, se = sqrt(1/3 + 1/3), Welch df = 4, t(0.95, 4) = 2.1318: +-1.741 of 100
    lo, hi = difference_interval(a, b)
    assert (lo, hi) == pytest.approx((-0.017407, 0.017407), abs=1e-6)
    assert equivalence_verdict(lo, hi, 0.03) == "equivalent"
    assert equivalence_verdict(lo, hi, 0.01) == "not shown"
    # within 1%: t(0.95, 2n - 2) * sqrt(2 / n) < 1 first at n = 7 (n = 6: 1.046)
    assert launches_for_equivalence(a, b, 0.01) == 7
    slower = [110.0, 110.5, 109.5]  # 10% slower: no launch count shows equivalence within 3%
    assert launches_for_equivalence(slower, b, 0.03) == 1001
    assert equivalence_verdict(*difference_interval(slower, b), 0.03) == "not shown"
    assert equivalence_verdict(*difference_interval([1.0], b), 0.03) == "too few launches"
    c = compare_latency(
        pd.DataFrame({"model": "m", "runtime": ["x"] * 3 + ["y"] * 3, "status": "ok", "p50_ms": a + b}),
        ["model"],
        "runtime",
        "p50_ms",
    )
    # at 3%, t(0.95, 2) * sqrt(2 / 2) = 2.92 < 3 already at 2 launches a side
    assert set(c.equivalence) == {"equivalent"} and (c.equivalence_launches == 2).all()


def test_paired_interval_by_hand_and_against_drift():
    from rmbench.stats.across_launches import difference_interval, paired_difference_interval

    # log ratios +-0.01 alternating: mean 0, sd sqrt(4e-4 / 3) = 0.011547, t(0.95, 3) = 2.353363
    baseline = [100.0, 120.0, 140.0, 160.0]
    candidate = [b * math.exp(e) for b, e in zip(baseline, (0.01, -0.01, 0.01, -0.01))]
    lo, hi = paired_difference_interval(candidate, baseline)
    assert (lo, hi) == pytest.approx((math.expm1(-0.013587), math.expm1(0.013587)), abs=2e-6)
    # the machine drifted 60% over the rounds: Welch's interval spans it, pairing takes it out
    welch_lo, welch_hi = difference_interval(candidate, baseline)
    assert welch_lo < -0.2 and welch_hi > 0.2
    assert all(math.isnan(v) for v in paired_difference_interval([1.0], [1.0]))
    assert all(math.isnan(v) for v in paired_difference_interval([1.0, 2.0], [1.0]))


def test_pairs_for_equivalence_by_hand_and_consistent_with_the_verdict():
    from rmbench.stats.across_launches import (
        equivalence_verdict,
        paired_difference_interval,
        pairs_for_equivalence,
    )

    baseline = [100.0, 120.0, 140.0, 160.0]
    candidate = [b * math.exp(e) for b, e in zip(baseline, (0.01, -0.01, 0.01, -0.01))]
    # mean 0, sd 0.011547; at 3% the room is log(1.03) = 0.029559: t(0.95, 1) * sd / sqrt(2) = 0.0516
    # is too wide, t(0.95, 2) * sd / sqrt(3) = 0.0195 fits
    assert pairs_for_equivalence(candidate, baseline, 0.03) == 3
    # at 1% (room log(1.01) = 0.00995): t(0.95, 4) / sqrt(5) = 0.953 > 0.00995 / sd = 0.862 > 0.823 at 6
    assert pairs_for_equivalence(candidate, baseline, 0.01) == 6
    for margin, verdict in ((0.03, "equivalent"), (0.01, "not shown")):
        assert equivalence_verdict(*paired_difference_interval(candidate, baseline), margin) == verdict
    # 5% slower in every pair: no number of pairs shows +-3%
    assert pairs_for_equivalence([b * 1.05 for b in baseline], baseline, 0.03) == 1001
    assert math.isnan(pairs_for_equivalence([1.0], [1.0], 0.03))


def test_comparisons_pair_launches_by_round_and_skip_unpaired_or_failed_ones():
    baseline = [100.0, 120.0, 140.0, 160.0]
    candidate = [b * math.exp(e) for b, e in zip(baseline, (0.01, -0.01, 0.01, -0.01))]
    launches = pd.DataFrame(
        {
            "model": "m",
            "runtime": ["x"] * 6 + ["y"] * 5,
            "launch": [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5],
            # x's launch 5 failed, 6 has no partner; y's launch 5 therefore none either
            "status": ["ok"] * 4 + ["mismatch", "ok"] + ["ok"] * 5,
            "p50_ms": candidate + [1.0, 500.0] + baseline + [900.0],
        }
    )
    c = compare_latency(launches, ["model"], "runtime", "p50_ms").set_index("candidate")
    assert (c.n_pairs == 4).all() and (c.n_candidate == 5).all()
    assert (c.loc["x", "paired_lo"], c.loc["x", "paired_hi"]) == pytest.approx(
        (-0.013495, 0.013680), abs=2e-6
    )
    assert c.loc["x", "paired_equivalence"] == "equivalent" and c.loc["x", "equivalence"] == "not shown"
    assert c.loc["x", "pairs_for_equivalence"] == 3  # the pairs of the test above
    # the speed-up paired by round: y over x, the log ratios' 95% interval, t(0.975, 3) = 3.182446
    half = 3.182446 * math.sqrt(4e-4 / 3) / 2
    assert (c.loc["x", "speedup_paired_lo"], c.loc["x", "speedup_paired_hi"]) == pytest.approx(
        (math.exp(-half), math.exp(half)), abs=1e-6
    )
    assert c.loc["y", "speedup_paired_lo"] == pytest.approx(c.loc["x", "speedup_paired_lo"], abs=1e-12)
    # its point: the pairs' log ratios average to 0, so 1.0, while the ratio of means over every
    # ok launch (x's unpartnered 500 ms, y's 900 ms) is not
    assert c.loc["x", "speedup_paired"] == pytest.approx(1.0, abs=1e-12)
    assert c.loc["x", "speedup"] == pytest.approx(np.mean(baseline + [900.0]) / np.mean(candidate + [500.0]))
    unnumbered = compare_latency(launches.drop(columns="launch"), ["model"], "runtime", "p50_ms")
    assert (unnumbered.n_pairs == 0).all() and set(unnumbered.paired_equivalence) == {"too few launches"}


def test_host_label_names_the_processor_its_widest_isa_and_cpus_or_the_gpu():
    from rmbench.probes.provenance import host_label

    intel = {"device": "cpu", "cpu": "Intel(R) Xeon(R) Processor", "usable_cpus": 2, "logical_cpus": 2}
    assert (
        host_label(intel | {"cpu_flags": ["avx2", "avx512f", "amx_tile"]})
        == "Intel(R) Xeon(R) Processor, AMX, 2 CPUs"
    )
    assert host_label(intel | {"cpu_flags": ["avx2", "fma"], "cpu": "AMD EPYC"}) == "AMD EPYC, AVX2, 2 CPUs"
    assert host_label({"device": "cuda", "device_name": "NVIDIA H200", "cpu": "x"}) == "NVIDIA H200"
    assert host_label({}) == ""


# The first processor block of /proc/cpuinfo on two virtual machines that both call their CPU
# "AMD EPYC" and report AVX-512 (a Zen 4 Genoa and a Zen 5 Turin).
GENOA = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\n"
TURIN = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\nstepping\t: 1\n"


def test_two_hosts_of_one_name_and_isa_get_different_labels():
    from rmbench.probes.provenance import cpu_signature, host_label

    genoa, turin = cpu_signature(GENOA), cpu_signature(TURIN)
    assert (genoa["vendor"], genoa["family"], genoa["model"], genoa["stepping"]) == (
        "AuthenticAMD",
        25,
        17,
        1,
    )
    assert (genoa["microarchitecture"], turin["microarchitecture"]) == ("Zen 4", "Zen 5")
    epyc = {
        "device": "cpu",
        "cpu": "AMD EPYC",
        "usable_cpus": 2,
        "cpu_flags": ["avx2", "avx512f", "avx512_bf16"],
    }
    old = host_label(epyc)  # a record from before the signature: the label it always had
    assert old == "AMD EPYC, AVX-512, 2 CPUs"
    caches = {"L1d": 32, "L2": 1024, "L3": 32768}
    labels = [host_label(epyc | {"cpu_signature": s | {"caches_kib": caches}}) for s in (genoa, turin)]
    assert (
        labels[0]
        == "AMD EPYC, Zen 4 (family 25 model 17 stepping 1), L2 1 MiB, L3 32 MiB, AVX-512 BF16, 2 CPUs"
    )
    assert labels[1].startswith("AMD EPYC, Zen 5 (family 26 model 2 stepping 1)") and len(set(labels)) == 2
    # an unknown family still tells hosts apart by its numbers; an unreadable cpuinfo gives no signature
    unknown = cpu_signature(GENOA.replace("cpu family\t: 25", "cpu family\t: 99"))
    assert "unknown microarchitecture (family 99 model 17" in host_label(epyc | {"cpu_signature": unknown})
    assert cpu_signature("model name\t: QEMU Virtual CPU\n") == {}


def test_provenance_records_the_variables_that_turn_onnx_runtimes_telemetry_off(monkeypatch, tmp_path):
    from rmbench.probes.provenance import ONNXRUNTIME_CI_VARIABLES, provenance

    for name in ONNXRUNTIME_CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    assert provenance(tmp_path, "cpu")["environment"]["ORT_DISABLE_TELEMETRY"] == "0"
    assert not set(ONNXRUNTIME_CI_VARIABLES) & set(provenance(tmp_path, "cpu")["environment"])
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # ONNX Runtime's own switch, whatever the other says
    assert provenance(tmp_path, "cpu")["environment"]["GITHUB_ACTIONS"] == "true"


def test_launches_from_two_kinds_of_host_stop_the_statistics_or_are_flagged_where_allowed():
    from rmbench.report.latex import study_latex
    from rmbench.report.tables import group_keys, study_table

    amx, avx2 = "Intel Xeon, AMX, 2 CPUs", "AMD EPYC, AVX2, 2 CPUs"
    launches = pd.DataFrame(
        {
            "model": ["m"] * 9,
            "device": ["cpu"] * 9,
            "set": ["main60"] * 9,
            "variant": ["-"] * 9,
            "runtime": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
            "status": ["ok"] * 9,
            "reason": [""] * 9,
            "p50_ms": [10.0, 11.0, 12.0, 20.0, 21.0, 22.0, 30.0, 31.0, 32.0],
            "p95_ms": [20.0] * 9,
            "host": [amx] * 6 + [amx, avx2, amx],
        }
    )
    keys = group_keys("latency")
    # by default the statistics stop, naming the cell and its hosts
    with pytest.raises(MixedHostsError, match=f"cell m, cpu, main60, -, c: .*on {avx2} and {amx}"):
        summarize(launches, [*keys, "runtime"], ["p50_ms", "p95_ms"])
    with pytest.raises(MixedHostsError, match=f"a vs c: .*a on {amx}; c on {avx2} and {amx}"):
        compare_latency(launches, keys, "runtime", "p50_ms")
    # allowed by the config, the tables flag them
    mixed = Checks(mixed_hosts=True)
    s = summarize(launches, [*keys, "runtime"], ["p50_ms", "p95_ms"], mixed).set_index("runtime")
    assert s.loc["a", "host"] == amx and s.loc["a", "warning"] == ""
    assert s.loc["c", "host"] == f"{avx2}; {amx}" and s.loc["c", "warning"] == "launches on 2 kinds of host"
    c = compare_latency(launches, keys, "runtime", "p50_ms", mixed).set_index(["candidate", "baseline"])
    assert not c.loc[("a", "b"), "across_hosts"] and c.loc[("c", "a"), "across_hosts"]
    table = study_table(s.reset_index(), c.reset_index(), "latency", "a").set_index("runtime")
    assert table.loc["b", "warning"] == "" and table.loc["b", "host"] == amx
    assert table.loc["c", "warning"] == "launches on 2 kinds of host; compared across hosts"
    latex = study_latex(table.reset_index(), "latency", "a", "Latency.", "tab:latency")
    assert f"Launches ran on {avx2} and {amx}." in latex and r"2 kinds" not in latex
    assert "3/3$^\\dagger$" in latex


def test_the_paper_names_the_hosts_of_each_device():
    from rmbench.report.paper import paper_numbers

    row = {"model": "m", "set": "main60", "runtime": "native", "launches_ok": 3, "launches": 3}
    latency = pd.DataFrame(
        [
            row | {"device": "cpu", "host": "Intel Xeon, AMX, 2 CPUs"},
            row | {"device": "cpu", "host": "AMD EPYC, AVX2, 2 CPUs; Intel Xeon, AMX, 2 CPUs"},
            row | {"device": "cuda", "host": ""},
        ]
    )
    numbers = paper_numbers({"latency": latency}, {"latency": "main60"})
    assert numbers["host/cpu"] == "AMD EPYC, AVX2, 2 CPUs and Intel Xeon, AMX, 2 CPUs"
    assert "host/cuda" not in numbers  # skipped everywhere: no host to name


def test_the_language_table_marks_a_native_vs_ort_comparison_across_hosts():
    from rmbench.report.latex import language_latex
    from rmbench.report.tables import language_table

    amx, avx2 = "Intel Xeon, AMX, 2 CPUs", "AMD EPYC, AVX2, 2 CPUs"
    launches = pd.DataFrame(
        {
            "model": ["m"] * 6,
            "device": ["cpu"] * 6,
            "runtime": ["native"] * 3 + ["ort_python"] * 3,
            "status": ["ok"] * 6,
            "p50_ms": [10.0, 10.2, 10.1, 10.3, 10.1, 10.2],
            "host": [amx] * 3 + [avx2] * 3,
        }
    )
    table = language_table(
        compare_latency(launches, ["model", "device"], "runtime", "p50_ms", Checks(mixed_hosts=True)).assign(
            set="s"
        )
    )
    assert table.iloc[0]["across_hosts"] and table.iloc[0]["host"] == f"{avx2}; {amx}"
    latex = language_latex(table, "Native vs ORT-Python.")
    assert "$^\\dagger$: native and ORT-Python launches from different kinds of host." in latex
    assert f"Launches ran on {avx2} and {amx}." in latex


def test_per_row_difference_is_the_median_over_rows_of_each_rows_median_across_launches():
    from rmbench.stats.across_launches import per_row_difference

    native = [[10.0, 20.0, 100.0], [11.0, 21.0, 101.0], [10.5, 20.5, 99.0]]
    python = [[11.0, 21.0, 100.0], [12.0, 22.0, 101.0], [11.5, 21.5, 99.0]]  # +1 ms on short rows only
    ms, lo, hi = per_row_difference(native, python, resamples=500)
    assert ms == pytest.approx(-1.0) and lo <= -1.0 <= hi and -2.0 <= lo and hi <= 0.0
    assert all(math.isnan(v) for v in per_row_difference(native, [[1.0, 2.0]]))  # other rows
    assert all(math.isnan(v) for v in per_row_difference([], python))


def test_the_language_table_gives_the_per_row_difference_once_per_pair_of_cells():
    from rmbench.report.latex import language_latex
    from rmbench.report.tables import language_table, row_differences

    def record(runtime, launch, latencies, status="ok", tokenize_us=None):
        cell = {"study": "latency", "model": "m", "device": "cpu", "runtime": runtime}
        metrics = {"latencies_ms": latencies, "p50_ms": float(np.median(latencies))}
        if tokenize_us is not None:  # the row's parts, timed apart (launches before did not)
            metrics |= {
                "tokenize_us": tokenize_us,
                "infer_ms": [ms - us / 1e3 for ms, us in zip(latencies, tokenize_us)],
            }
        return {
            "cell": cell | {"params": "set~main60", "launch": launch},
            "settings": {"threads": 2},
            "status": status,
            "metrics": metrics,
        }

    records = [record("native", i, [10.0, 20.0, 30.0], tokenize_us=[100.0] * 3) for i in (1, 2)]
    records += [record("ort_python", i, [11.0, 21.0, 31.0], tokenize_us=[900.0] * 3) for i in (1, 2)]
    records += [
        record("ort_python", 3, [99.0, 99.0, 99.0], status="mismatch", tokenize_us=[1.0] * 3),
        record("ort_python", 4, [11.0, 21.0, 31.0]),  # counts for the row, has no parts
        record("hf_eager", 1, [50.0] * 3, tokenize_us=[1.0] * 3),
    ]
    differences = row_differences(records)
    assert len(differences) == 1
    first = differences.iloc[0]
    assert first["row_difference_ms"] == pytest.approx(-1.0)
    # of native's 1 ms per row, 0.8 ms is tokenizing (0.1 against 0.9 ms), 0.2 ms the engine's call
    assert first["tokenize_difference_ms"] == pytest.approx(-0.8)
    assert first["infer_difference_ms"] == pytest.approx(-0.2)
    assert (first["native_tokenize_us"], first["ort_python_tokenize_us"]) == pytest.approx((100.0, 900.0))
    launches = pd.DataFrame(
        {
            "model": ["m"] * 4,
            "device": ["cpu"] * 4,
            "set": ["main60"] * 4,
            "variant": ["-"] * 4,
            "runtime": ["native"] * 2 + ["ort_python"] * 2,
            "launch": [1, 2, 1, 2],
            "status": ["ok"] * 4,
            "p50_ms": [20.0, 20.2, 21.0, 21.1],
            "p95_ms": [30.0, 30.2, 31.0, 31.1],
        }
    )
    keys = ["model", "device", "set", "variant"]
    comparisons = pd.concat([compare_latency(launches, keys, "runtime", m) for m in ("p50_ms", "p95_ms")])
    table = language_table(comparisons, differences)
    assert list(table["row_difference_ms"]) == pytest.approx([-1.0, -1.0])
    latex = language_latex(table, "Native vs ORT-Python.")
    assert latex.count("-1.00 [-1.00, -1.00]") == 1 and "Per row" in latex
    assert latex.count("-0.80 [-0.80, -0.80]") == 1 and latex.count("-0.20 [-0.20, -0.20]") == 1
    assert "Tokenizing" in latex and "Engine call" in latex
    # log ratios -0.04879, -0.04359: t(0.95, 1) = 6.3138 -> [-6.1, -2.9] %
    assert "Paired by round" in latex and "[-6.1, -2.9] not shown (2 pairs)" in latex
    # where the observed ratio lies inside the margin, the cell also says how many pairs would show it
    inside = table.assign(paired_lo_pct=-3.5, paired_hi_pct=1.2, pairs_for_equivalence=31.0)
    assert "[-3.5, +1.2] not shown (2 pairs, 31 needed)" in language_latex(inside, "Native vs ORT-Python.")
    # launches from before the parts were timed: the per-row column alone
    stripped = [r | {"metrics": {k: r["metrics"][k] for k in ("latencies_ms", "p50_ms")}} for r in records]
    without_parts = row_differences(stripped)
    assert without_parts["tokenize_difference_ms"].isna().all()
    latex = language_latex(language_table(comparisons, without_parts), "Native vs ORT-Python.")
    assert "Per row" in latex and "Tokenizing" not in latex
