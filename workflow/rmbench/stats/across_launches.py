"""Statistics across launches: each launch contributes one value per metric (its p50, its p95).

Across launches: mean and 95% t-interval; Welch's t-test between two cells; a difference is
real only when the two intervals do not overlap (the study's rule). Beside them: a bootstrap
interval for speed-ups (resampling launches), and warnings for cells whose launches vary too
much or drift with the order they ran in, with the launch count their variance would need.

"The same speed" is a claim of its own: intervals that overlap show no difference, not its
absence. Two one-sided tests (TOST) show equivalence within a margin when the 90% Welch interval
of the relative difference lies inside it; beside it the same test on launches paired by the
round they ran in, which takes the machine's drift between rounds out of the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import special

from rmbench.errors import MixedHostsError
from rmbench.probes.provenance import host_cell, launch_hosts

CONFIDENCE = 0.95
# The most launches (or pairs) a launches-needed estimate searches; past it, it returns this + 1.
COUNT_LIMIT = 1000


@dataclass(frozen=True)
class Checks:
    """Thresholds of the instability warnings (config `stats`)."""

    cv_warning: float = 0.10  # launch-to-launch coefficient of variation above this is flagged
    trend_p: float = 0.05  # a rank correlation with launch order below this p is flagged
    half_width: float = 0.05  # target CI half-width (relative) for the launches-needed estimate
    bootstrap: int = 10000  # resamples of the bootstrap speed-up interval
    seed: int = 0
    equivalence_margin: float = 0.03  # "the same speed": relative difference within +- this
    # Launches from two kinds of host (provenance.host_label) pooled in a cell or compared: an
    # error, unless the config allows it; the table then flags it.
    mixed_hosts: bool = False


def check_hosts(what: str, hosts: dict[str, list[str]], checks: Checks) -> None:
    """Stops where `hosts` (who: the kinds of host its launches ran on) name more than one kind,
    unless checks.mixed_hosts; the message names each side's hosts."""
    kinds = {h for found in hosts.values() for h in found}
    if len(kinds) > 1 and not checks.mixed_hosts:
        sides = "; ".join(f"{who} on {' and '.join(found)}" for who, found in hosts.items())
        raise MixedHostsError(
            f"{what}: launches from {len(kinds)} kinds of host ({sides}). A ratio of two machines "
            "measures the machines: rerun these cells on one kind, or set stats.mixed_hosts: true "
            "to pool them anyway (the tables then flag them)."
        )


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float
    n: int
    sd: float

    def overlaps(self, other: Interval) -> bool:
        return not (self.hi < other.lo or other.hi < self.lo)


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile, as scipy.stats.t.ppf gives it (the same function underneath), without
    its argument checks: the sequential looks call it thousands of times."""
    return float(special.stdtrit(df, p))


def t_interval(values, confidence: float = CONFIDENCE) -> Interval:
    """Mean and two-sided t confidence interval; with fewer than 2 values the bounds are NaN."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, math.nan)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, n, math.nan)
    sd = float(x.std(ddof=1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, sd)


def welch_p(a, b) -> float:
    """Two-sided p-value of Welch's unequal-variance t-test (NaN when either side has < 2 values)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return math.nan
    from scipy import stats as sps  # imported here: 0.8 s, and most jobs importing this module test nothing

    return float(sps.ttest_ind(a, b, equal_var=False).pvalue)


def difference_interval(candidate, baseline, confidence: float = 0.90) -> tuple[float, float]:
    """Welch interval of mean(candidate) - mean(baseline), relative to mean(baseline); at 90% it
    is the two one-sided tests at 5% each (NaN with fewer than 2 values a side)."""
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if len(c) < 2 or len(b) < 2 or not b.mean() > 0:
        return math.nan, math.nan
    vc, vb = c.var(ddof=1) / len(c), b.var(ddof=1) / len(b)
    se = math.sqrt(vc + vb)
    if se == 0:
        d = float(c.mean() - b.mean()) / b.mean()
        return d, d
    df = (vc + vb) ** 2 / (vc**2 / (len(c) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile(0.5 + confidence / 2, df) * se
    d = float(c.mean() - b.mean())
    return (d - half) / float(b.mean()), (d + half) / float(b.mean())


def _pair_log_ratios(candidate, baseline) -> np.ndarray | None:
    """log(candidate / baseline) per pair; None under 2 pairs, for unequal lengths or a value <= 0."""
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if len(c) != len(b) or len(c) < 2 or not (c > 0).all() or not (b > 0).all():
        return None
    return np.log(c / b)


def _ratio_minus_one(log_ratio: float) -> float:
    """exp(log_ratio) - 1, infinite where exp overflows: at the tiny levels of an early sequential
    look, two pairs give a t quantile in the tens of thousands and a bound past float range."""
    return math.expm1(log_ratio) if log_ratio < 700 else math.inf


def paired_difference_interval(candidate, baseline, confidence: float = 0.90) -> tuple[float, float]:
    """Interval of the relative difference from pairs of launches that ran side by side (the same
    round of the schedule): a t interval on the mean of each pair's log ratio, back on the ratio
    scale (a geometric mean ratio minus 1). What the machine did between rounds moves both sides of
    a pair and cancels, so where it drifted this is narrower than Welch's (NaN under 2 pairs)."""
    log_ratios = _pair_log_ratios(candidate, baseline)
    if log_ratios is None:
        return math.nan, math.nan
    log_ratio = t_interval(log_ratios, confidence)
    return _ratio_minus_one(log_ratio.lo), _ratio_minus_one(log_ratio.hi)


def paired_speedup_interval(candidate, baseline, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Interval of the speed-up (baseline over candidate, lower is better) from launches paired by
    round: the geometric mean of the rounds' ratios, so drift between rounds cancels (NaN under 2
    pairs). The study's verdict stays the non-overlap of the cells' intervals."""
    lo, hi = paired_difference_interval(candidate, baseline, confidence)
    return 1 / (1 + hi), (1 / (1 + lo) if lo > -1 else math.inf)


def paired_speedup(candidate, baseline) -> float:
    """The speed-up paired by round (baseline over candidate): the geometric mean of the rounds'
    ratios, the point estimate inside paired_speedup_interval (NaN under 2 pairs). It can differ
    from the ratio of means, which also counts launches without a partner."""
    log_ratios = _pair_log_ratios(candidate, baseline)
    return math.nan if log_ratios is None else math.exp(-float(log_ratios.mean()))


def launch_pairs(a: pd.Series | None, b: pd.Series | None) -> tuple[list, list]:
    """The values of a's and b's launches (each indexed by launch number) that share a number:
    the schedule runs every cell's launch k in round k. Empty where launches are unnumbered
    (None) or a number repeats."""
    if a is None or b is None or not (a.index.is_unique and b.index.is_unique):
        return [], []
    if a.index.equals(b.index) and a.index.is_monotonic_increasing:  # the usual case, without a lookup
        return a.tolist(), b.tolist()
    shared = a.index.intersection(b.index).sort_values()
    return a[shared].tolist(), b[shared].tolist()


def equivalence_verdict(lo: float, hi: float, margin: float) -> str:
    """'equivalent' when the difference interval lies within +-margin, else 'not shown'."""
    if math.isnan(lo) or math.isnan(hi):
        return "too few launches"
    return "equivalent" if -margin < lo and hi < margin else "not shown"


def _fewest(shows, limit: int) -> float:
    """The smallest count from 2 to limit for which shows(count) holds, else limit + 1."""
    return float(next((n for n in range(2, limit + 1) if shows(n)), limit + 1))


def launches_for_equivalence(candidate, baseline, margin: float, limit: int = COUNT_LIMIT) -> float:
    """Launches per side that would show equivalence within +-margin if the means and spreads
    stayed as observed (limit + 1 when the observed difference itself reaches the margin)."""
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if len(c) < 2 or len(b) < 2 or not b.mean() > 0:
        return math.nan
    d, scale = abs(float(c.mean() - b.mean())), margin * float(b.mean())
    if d >= scale:
        return float(limit + 1)
    spread = float(c.var(ddof=1) + b.var(ddof=1))
    return _fewest(lambda n: d + t_quantile(0.95, 2 * n - 2) * math.sqrt(spread / n) < scale, limit)


def pairs_for_equivalence(candidate, baseline, margin: float, limit: int = COUNT_LIMIT) -> float:
    """Pairs that would show equivalence within +-margin by the paired interval if the pairs' mean
    log ratio and its spread stayed as observed (limit + 1 when the observed ratio itself reaches
    the margin; NaN where paired_difference_interval has no interval)."""
    log_ratios = _pair_log_ratios(candidate, baseline)
    if log_ratios is None:
        return math.nan
    mean, sd = float(log_ratios.mean()), float(log_ratios.std(ddof=1))
    # the margin on the ratio scale, as log bounds: expm1(lo) > -margin and expm1(hi) < margin
    room = min(mean - math.log1p(-margin), math.log1p(margin) - mean)
    if room <= 0:
        return float(limit + 1)
    return _fewest(lambda n: t_quantile(0.95, n - 1) * sd / math.sqrt(n) < room, limit)


def latency_verdict(candidate: Interval, baseline: Interval) -> str:
    """'faster' / 'slower' only when the 95% intervals do not overlap (lower is better)."""
    if any(math.isnan(v) for v in (candidate.lo, candidate.hi, baseline.lo, baseline.hi)):
        return "too few launches"
    if candidate.overlaps(baseline):
        return "not distinguishable"
    return "faster" if candidate.hi < baseline.lo else "slower"


def intervals_wording(verdict: str) -> str:
    """How tables and verdict lists say a verdict: 'CIs apart' (a difference) or 'CIs overlap'."""
    return "CIs apart" if verdict in ("faster", "slower") else "CIs overlap"


def speedup(candidate: Interval, baseline: Interval) -> tuple[float, float]:
    """Latency speed-up of candidate over baseline: point estimate and the conservative bound
    (baseline's CI lower bound over candidate's CI upper bound), as the study reports them."""
    if not candidate.mean > 0:  # a count or time of zero has no ratio
        return math.nan, math.nan
    point = baseline.mean / candidate.mean
    # A CI reaching zero or below (few, noisy launches) bounds nothing.
    conservative = baseline.lo / candidate.hi if baseline.lo > 0 and candidate.hi > 0 else math.nan
    return point, conservative


def agreement_interval(agreeing: int, pairs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson interval of a share measured as `agreeing` of `pairs` (exact, never outside
    [0, 1]): what the fidelity gate's sample can tell. 60 of 60 bounds it below at 94%."""
    if pairs <= 0:
        return math.nan, math.nan
    from scipy import stats as sps

    found = sps.binomtest(int(agreeing), int(pairs)).proportion_ci(confidence, method="exact")
    return float(found.low), float(found.high)


def pairs_to_show(share: float, confidence: float = CONFIDENCE) -> int:
    """The fewest pairs whose agreement interval, with every pair agreeing, lies at or above
    `share`: the sample a gate needs before it can show that share (368 for 99%)."""
    return math.ceil(math.log((1 - confidence) / 2) / math.log(share))


def coefficient_of_variation(values) -> float:
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return math.nan
    return float(x.std(ddof=1) / x.mean())


def launches_needed(
    values, half_width: float = 0.05, confidence: float = CONFIDENCE, limit: int = COUNT_LIMIT
) -> float:
    """Launches whose t-interval would reach a half-width of `half_width` x mean, at the observed
    spread (NaN with fewer than 2 values; `limit` + 1 when even `limit` would not)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return math.nan
    sd, target = float(x.std(ddof=1)), half_width * abs(float(x.mean()))
    return _fewest(lambda n: t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n) <= target, limit)


def order_trend_p(values, order) -> float:
    """p-value of Kendall's tau (exact for few launches) between values and the order launches
    ran in: a small p means the machine drifted during the cell. With 3 launches the smallest
    possible p is 1/3, so only cells with enough launches can be flagged (NaN below 3)."""
    x, o = np.asarray(values, dtype=float), np.asarray(order, dtype=float)
    keep = ~np.isnan(o)
    if keep.sum() < 3 or np.unique(x[keep]).size < 2:
        return math.nan
    from scipy import stats as sps

    return float(sps.kendalltau(x[keep], o[keep]).pvalue)


def bootstrap_speedup(candidate, baseline, resamples: int = 10000, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of mean(baseline) / mean(candidate), resampling each side's launches."""
    c, b = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if len(c) < 2 or len(b) < 2 or not (c > 0).all():
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    c_means = rng.choice(c, (resamples, len(c))).mean(axis=1)
    b_means = rng.choice(b, (resamples, len(b))).mean(axis=1)
    ratios = b_means / c_means
    alpha = (1 - CONFIDENCE) / 2
    return float(np.quantile(ratios, alpha)), float(np.quantile(ratios, 1 - alpha))


def instability_warnings(values, order, checks: Checks) -> list[str]:
    warnings = []
    cv = coefficient_of_variation(values)
    if not math.isnan(cv) and cv > checks.cv_warning:
        warnings.append(f"CV {100 * cv:.0f}% > {100 * checks.cv_warning:.0f}%")
    p = order_trend_p(values, order)
    if not math.isnan(p) and p < checks.trend_p:
        warnings.append(f"trend with launch order (Kendall p={p:.2g})")
    return warnings


def summarize(
    launches: pd.DataFrame, keys: list[str], metrics: list[str], checks: Checks = Checks()
) -> pd.DataFrame:
    """One row per cell: launch counts by status and, over the ok launches, each metric's
    mean, CI bounds, coefficient of variation and the launches a 5% half-width would need; the
    kinds of host they ran on; and the cell's warnings (instability of its first metric,
    launches on more than one kind of host, compiles inside the timed region)."""
    rows = []
    for key, group in launches.groupby(keys, sort=True, dropna=False):
        ok = group[group["status"] == "ok"]
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        row["launches"] = len(group)
        row["launches_ok"] = len(ok)
        row["statuses"] = ";".join(f"{s}:{c}" for s, c in group["status"].value_counts().sort_index().items())
        row["reasons"] = ";".join(sorted(set(group["reason"].dropna()) - {""}))
        for metric in metrics:
            iv = t_interval(ok[metric])
            row |= {
                f"{metric}": iv.mean,
                f"{metric}_lo": iv.lo,
                f"{metric}_hi": iv.hi,
                f"{metric}_cv": coefficient_of_variation(ok[metric]),
                f"{metric}_launches_needed": launches_needed(ok[metric], checks.half_width),
            }
        if "rows_cut" in ok and ok["rows_cut"].notna().any():  # rows past the model's limit
            row["rows_cut"] = int(ok["rows_cut"].max())
        order = ok["order"] if "order" in ok else pd.Series(np.nan, index=ok.index)
        warnings = instability_warnings(ok[metrics[0]], order, checks)
        hosts = launch_hosts(ok)
        check_hosts(f"cell {', '.join(str(row[k]) for k in keys)}", {"its launches": hosts}, checks)
        row["host"] = host_cell(hosts)
        if len(hosts) > 1:
            warnings.append(f"launches on {len(hosts)} kinds of host")
        if "timed_compiles" in ok and (compiled := int((ok["timed_compiles"] > 0).sum())):
            # torch.compile met a new shape after its warm-up: a compile inside the wall time
            warnings.append(f"compiled while timed in {compiled} of {len(ok)} launches")
        row["warning"] = "; ".join(warnings)
        rows.append(row)
    return pd.DataFrame(rows)


def compare_latency(
    launches: pd.DataFrame, keys: list[str], between: str, metric: str, checks: Checks = Checks()
) -> pd.DataFrame:
    """Every pair of values of `between` (e.g. runtimes) within each group of `keys`: speed-up,
    conservative speed-up, bootstrap interval, Welch p and verdict of the first against the second."""
    rows = []
    ok = launches[launches["status"] == "ok"]
    for key, group in ok.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        values = {name: g[metric].to_numpy() for name, g in group.groupby(between)}
        hosts = {name: launch_hosts(g) for name, g in group.groupby(between)}
        by_launch = {
            name: g.set_index("launch")[metric] if "launch" in g else None
            for name, g in group.groupby(between)
        }
        for a, b in combinations(sorted(values), 2):
            check_hosts(f"{', '.join(map(str, key))}: {a} vs {b}", {a: hosts[a], b: hosts[b]}, checks)
            for cand, base in ((a, b), (b, a)):
                ci_c, ci_b = t_interval(values[cand]), t_interval(values[base])
                point, conservative = speedup(ci_c, ci_b)
                boot_lo, boot_hi = bootstrap_speedup(
                    values[cand], values[base], checks.bootstrap, checks.seed
                )
                diff_lo, diff_hi = difference_interval(values[cand], values[base])
                paired = launch_pairs(by_launch[cand], by_launch[base])
                paired_lo, paired_hi = paired_difference_interval(*paired)
                speedup_paired_lo, speedup_paired_hi = paired_speedup_interval(*paired)
                pair_hosts = set(hosts[cand]) | set(hosts[base])
                rows.append(
                    dict(zip(keys, key))
                    | {
                        "metric": metric,
                        "candidate": cand,
                        "baseline": base,
                        "candidate_mean": ci_c.mean,
                        "baseline_mean": ci_b.mean,
                        "speedup": point,
                        "speedup_conservative": conservative,
                        "speedup_boot_lo": boot_lo,
                        "speedup_boot_hi": boot_hi,
                        "speedup_paired": paired_speedup(*paired),
                        "speedup_paired_lo": speedup_paired_lo,
                        "speedup_paired_hi": speedup_paired_hi,
                        "welch_p": welch_p(values[cand], values[base]),
                        "verdict": latency_verdict(ci_c, ci_b),
                        "difference_lo": diff_lo,
                        "difference_hi": diff_hi,
                        "equivalence": equivalence_verdict(diff_lo, diff_hi, checks.equivalence_margin),
                        "equivalence_launches": launches_for_equivalence(
                            values[cand], values[base], checks.equivalence_margin
                        ),
                        "paired_lo": paired_lo,
                        "paired_hi": paired_hi,
                        "paired_equivalence": equivalence_verdict(
                            paired_lo, paired_hi, checks.equivalence_margin
                        ),
                        "n_pairs": len(paired[0]),
                        "pairs_for_equivalence": pairs_for_equivalence(*paired, checks.equivalence_margin),
                        "n_candidate": ci_c.n,
                        "n_baseline": ci_b.n,
                        # a ratio of two kinds of machine measures the machines as well
                        "host": host_cell(pair_hosts),
                        "across_hosts": len(pair_hosts) > 1,
                    }
                )
    return pd.DataFrame(rows)


def per_row_median(launches: list[list[float]]) -> float:
    """The median over rows of each row's median across launches (NaN without launches)."""
    return float(np.median(np.median(np.asarray(launches, dtype=float), axis=0))) if launches else math.nan


def per_row_difference(
    candidate: list[list[float]], baseline: list[list[float]], resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """How much longer (ms, negative: shorter) the candidate takes per row than the baseline, from
    each launch's per-row latencies over the same rows: each row's median across launches, the
    median over rows of their difference; with a bootstrap 95% interval that resamples launches.
    A fixed cost per row (a Python call around the same engine) shows here at every length,
    where a launch's p50/p95 mixes it with the row at the percentile."""
    cand, base = np.asarray(candidate, dtype=float), np.asarray(baseline, dtype=float)
    if cand.ndim != 2 or base.ndim != 2 or cand.shape[1] != base.shape[1] or not len(cand) or not len(base):
        return math.nan, math.nan, math.nan

    def statistic(c, b):
        return float(np.median(np.median(c, axis=0) - np.median(b, axis=0)))

    rng = np.random.default_rng(seed)
    boot = [
        statistic(cand[rng.integers(0, len(cand), len(cand))], base[rng.integers(0, len(base), len(base))])
        for _ in range(resamples)
    ]
    alpha = (1 - CONFIDENCE) / 2
    return statistic(cand, base), float(np.quantile(boot, alpha)), float(np.quantile(boot, 1 - alpha))
