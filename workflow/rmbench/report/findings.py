"""What a run found, in words: one line per verdict, written from the paper's tables.

docs/findings.md quotes this file from a measured run; `snakemake paper/tables/findings.md` writes
it for any results tree, so the answers there can be checked against the tables they come from.
"""

from __future__ import annotations

import math

import pandas as pd

from rmbench.report.caveat import caveat
from rmbench.report.tables import paired_text, variant_label
from rmbench.stats.across_launches import intervals_wording
from rmbench.stats.replication import OUTCOMES


def _num(value: float, digits: int = 2) -> str:
    return (
        "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"
    )


def _interval(lo: float, hi: float, digits: int = 2, unit: str = "") -> str:
    if any(isinstance(v, float) and math.isnan(v) for v in (lo, hi)):
        return ""
    return f" [{lo:.{digits}f}{unit}, {hi:.{digits}f}{unit}]"


def _hosts(*tables: pd.DataFrame) -> str:
    hosts = sorted({h for t in tables if "host" in t for h in t["host"].dropna().unique() if h})
    return "; ".join(hosts) or "unrecorded"


def latency_lines(table: pd.DataFrame, headline_set: str) -> list[str]:
    """Each runtime against the baseline on the headline set's CPU cells, p50 and speed-up."""
    lines = []
    rows = table[(table["set"] == headline_set) & (table["device"] == "cpu")]
    for model, group in rows.groupby("model"):
        for r in group.itertuples():
            if not r.launches_ok:  # skipped, unsupported or failed: say so, with its reason
                note = f" ({r.note})" if isinstance(r.note, str) and r.note else ""
                lines.append(f"- {model}, {r.runtime}: no ok launch of {r.launches}{note}")
                continue
            if not isinstance(r.verdict, str) or not r.verdict:
                lines.append(f"- {model}, {r.runtime}: p50 {_num(r.p50_ms, 1)} ms (the baseline)")
                continue
            paired = paired_text(
                getattr(r, "speedup_paired", math.nan), r.speedup_paired_lo, r.speedup_paired_hi
            )
            lines.append(
                f"- {model}, {r.runtime}: p50 {_num(r.p50_ms, 1)} ms, {_num(r.speedup)}x the baseline"
                f"{', ' + paired if paired else ''}, {verdict_text(r)}"
            )
    return lines


def verdict_text(r) -> str:
    """'faster (look 2 of 3 at level 0.016; the paper's rule: CIs apart; 9 launches)': the
    looks' verdict and the paper's overlap rule beside it; 'faster (CIs apart; 3 launches)' where
    the launches were fixed in advance and the overlap rule is the design's."""
    look = getattr(r, "verdict_look", "")
    if isinstance(look, str) and look:
        paper = intervals_wording(getattr(r, "paper_verdict", r.verdict))
        test = f"look {look} at level {r.verdict_level:.2g}; the paper's rule: {paper}"
    else:  # launches fixed in advance: the overlap rule is the design's
        test = intervals_wording(r.verdict)
    return f"{r.verdict} ({test}; {r.launches_ok} launches)"


def best_runtime_lines(table: pd.DataFrame, baseline: str) -> list[str]:
    """The best CPU runtime per model, against the baseline and the runner-up."""
    lines = []
    for r in table.itertuples():
        over = [
            f"{_num(getattr(r, f'over_{side}'))}x {who}"
            + paired_text(
                *(getattr(r, f"over_{side}_paired{end}", math.nan) for end in ("", "_lo", "_hi")), ", "
            )
            + f", {getattr(r, f'over_{side}_shows')}"
            for side, who in (("baseline", f"over {baseline}"), ("runner_up", f"over {r.runner_up}"))
            if isinstance(getattr(r, f"over_{side}_shows", None), str)
        ]
        share = getattr(r, "of_ceiling", math.nan)
        if not math.isnan(share):  # its launches probed the GEMM ceiling
            over.append(
                f"{100 * share:.0f}%{_interval(100 * r.of_ceiling_lo, 100 * r.of_ceiling_hi, 0)} of the "
                f"{r.probed_ceiling_gflops:.0f} GFLOP/s GEMM ceiling probed in its launches"
            )
        lines.append(f"- {r.model}: {r.best} ({r.n_best} launches); " + "; ".join(over))
    return lines


def language_lines(table: pd.DataFrame) -> list[str]:
    return [
        f"- {r.model}, {r.metric}: native {_num(r.difference_pct, 1)}% from ORT-Python, "
        f"paired by round{_interval(r.paired_lo_pct, r.paired_hi_pct, 1, '%')}: {r.paired_equivalence} "
        f"within the margin ({r.n_pairs} pairs)"
        for r in table.itertuples()
    ]


def replication_lines(table: pd.DataFrame, baseline: str) -> list[str]:
    """The verdicts against the baseline, checked on the other sets and the other model."""
    checked = table[table["reproduced"].isin(OUTCOMES) & (table["baseline"] == baseline)]
    counts = checked["reproduced"].value_counts()
    summary = (
        f"{counts.get('yes', 0)} of {len(checked)} verdicts against {baseline} reproduced, "
        f"{counts.get('not confirmed', 0)} not confirmed, {counts.get('no', 0)} contradicted "
        "(each set's verdict by the overlap rule)"
    )
    words = {"no": "contradicted", "not confirmed": "not confirmed"}
    return [f"- {summary}"] + [
        f"- {words[r.reproduced]}: {r.model} {r.metric} {r.candidate} vs {r.baseline} ({r.verdict} "
        f"on the headline set; {r.disagreeing} differed)"
        for r in checked.itertuples()
        if r.reproduced in words
    ]


def statement_lines(verdicts: pd.DataFrame, headline_set: str) -> list[str]:
    """The verdict lists (batching, concurrency) as the pipeline words them, each with its model,
    runtime (a service's line names its own) and, off the headline set, its set."""
    lines = []
    for r in verdicts[verdicts["device"] == "cpu"].itertuples():
        who = [r.model] + ([r.runtime] if isinstance(r.runtime, str) else [])
        where = "" if r.set == headline_set else f" ({r.set})"
        lines.append(f"- {', '.join(who)}{where}: {r.statement}")
    return lines


def speedup_lines(table: pd.DataFrame, metric: str, unit: str) -> list[str]:
    """A study table's cells against its baseline (tokenizer, zero-copy)."""
    lines = []
    for r in table[table["device"] == "cpu"].itertuples():
        label = r.runtime if getattr(r, "variant", "-") in ("-", None) else variant_label(r.variant)
        value = f"{_num(getattr(r, metric), 1)} {unit}"
        if isinstance(r.verdict, str) and r.verdict:
            value += f", {_num(r.speedup)}x the baseline, {r.verdict} ({intervals_wording(r.verdict)})"
        lines.append(f"- {r.model}, {label}: {value}")
    return lines


def colocation_lines(table: pd.DataFrame) -> list[str]:
    """Each scorer beside the generator, per core split: end-to-end rows/s, what each side lost,
    and the end-to-end speed-up against the baseline scorer."""
    lines = []
    for r in table[(table["device"] == "cpu") & (table["launches_ok"] > 0)].itertuples():
        line = (
            f"- {r.model}, {variant_label(r.variant)}, {r.runtime}: {_num(r.e2e_rows_per_s)} rows/s end "
            f"to end ({_num(r.colocation_gain)}x generating, then scoring); beside each other generation "
            f"ran {_num(r.gen_slowdown)}x and scoring {_num(r.score_slowdown)}x slower"
        )
        if isinstance(r.verdict, str) and r.verdict:
            line += (
                f"; {_num(r.speedup)}x the baseline end to end, {r.verdict} ({intervals_wording(r.verdict)})"
            )
        lines.append(line)
    return lines


def compile_lines(table: pd.DataFrame) -> list[str]:
    return [
        f"- {r.model}, {variant_label(r.variant)}: first call {_num(r.first_call_s, 1)} s, "
        f"{_num(r.recompiles, 1)} recompiles, p50 {_num(r.p50_ms, 1)} ms"
        for r in table[table["device"] == "cpu"].itertuples()
    ]


def findings_markdown(
    tables: dict[str, pd.DataFrame], headline_sets: dict[str, str], baselines: dict[str, str], tier: str
) -> str:
    """The run's verdicts, study by study, for the tables this run made."""
    out = [
        "# What this run found",
        "",
        f"Written from `paper/tables/` by the `findings` rule ({tier} tier). Hosts: {_hosts(*tables.values())}.",
        "",
    ]
    if caveat():
        out[2:2] = [f"**{caveat()}**", ""]
    sections = [
        ("latency", "Latency (CPU, headline set)", lambda t: latency_lines(t, headline_sets["latency"])),
        (
            "best_runtime",
            "The best CPU runtime",
            lambda t: best_runtime_lines(t, baselines["latency"]),
        ),
        ("language", "The language: native against ORT-Python", language_lines),
        (
            "replication",
            "Replication of the latency verdicts",
            lambda t: replication_lines(t, baselines["latency"]),
        ),
        (
            "batching_verdicts",
            "Batching against every row alone",
            lambda t: statement_lines(t, headline_sets["batching"]),
        ),
        ("concurrency_verdicts", "Concurrency", lambda t: statement_lines(t, headline_sets["concurrency"])),
        ("compile", "torch.compile on new lengths", compile_lines),
        ("colocation", "Co-location with a rollout generator", colocation_lines),
        ("tokenizer", "Tokenizers (microseconds per pair)", lambda t: speedup_lines(t, "mean_us", "us")),
        ("zerocopy", "Zero-copy and preallocated buffers", lambda t: speedup_lines(t, "p50_ms", "ms p50")),
    ]
    for name, title, lines in sections:
        if name in tables:
            out += [f"## {title}", "", *lines(tables[name]), ""]
    return "\n".join(out)
