"""Every LaTeX table the paper inputs, rendered from the study tables; captions from captions.yaml.

The tables themselves (what is compared, with which statistics) are built elsewhere
(rmbench.report.tables, decomposition, operators, thread_probe, roofline, replication); this module only
says how they read in the paper: booktabs layout, intervals in brackets, verdicts in words, and
a closing sentence naming the hosts the launches ran on.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import yaml

from rmbench.export.precision import POOLED_SET, gate_resolution
from rmbench.plan.studies import STUDIES
from rmbench.probes.operators import SUMMARY_ROWS
from rmbench.probes.provenance import launch_hosts
from rmbench.probes.thread_probe import RATIOS
from rmbench.report.caveat import caveat
from rmbench.report.tables import (
    ROW_PART_HEADS,
    ROW_PARTS,
    across_hosts,
    difference_columns,
    group_keys,
    variant_label,
)
from rmbench.stats.across_launches import COUNT_LIMIT, intervals_wording

# The captions, as data: what each table claims (captions.yaml).
CAPTIONS = yaml.safe_load(Path(__file__).with_name("captions.yaml").read_text(encoding="utf-8"))
# Each study table's caption; the table adds the hosts its launches ran on.
STUDY_CAPTIONS = CAPTIONS["study"]


def caption_text(name: str, **values) -> str:
    """A caption of captions.yaml (a part as 'group.part'), its {names} filled in."""
    text = CAPTIONS
    for key in name.split("."):
        text = text[key]
    return text.format(**values)


def fmt_ci(mean: float, lo: float, hi: float, digits: int = 1) -> str:
    if math.isnan(mean):
        return "--"
    if math.isnan(lo):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_pct(mean: float, lo: float = math.nan, hi: float = math.nan) -> str:
    """A fraction as a percentage, with its interval where given: '84% [80, 88]'; '--' where none."""
    if mean is None or math.isnan(mean):
        return "--"
    if math.isnan(lo):
        return f"{100 * mean:.0f}%"
    return f"{100 * mean:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def latex_escape(text: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("~", r"\textasciitilde{}"),
    ):
        text = text.replace(a, b)
    return text


def caveated(caption: str) -> str:
    """A caption (LaTeX already) after the run's caveat (rmbench.report.caveat), escaped."""
    return f"{latex_escape(caveat())} {caption}" if caveat() else caption


def booktabs(colspec: str, head: list[str], body: list[list[str]], caption: str, label: str) -> str:
    """A LaTeX table float: header and body cells already in LaTeX. A table wider than the text
    is scaled down to its width (graphicx), a narrower one keeps its size."""
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        rf"\begin{{tabular}}{{{colspec}}}",
        r"\toprule",
    ]
    lines += [" & ".join(head) + r" \\", r"\midrule"]
    lines += [" & ".join(cells) + r" \\" for cells in body]
    lines += [
        r"\bottomrule",
        r"\end{tabular}}",
        rf"\caption{{{caveated(caption)}}}",
        rf"\label{{{label}}}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def study_latex(table: pd.DataFrame, study: str, baseline: str, caption: str, label: str) -> str:
    """A booktabs table: each metric with its 95% CI, speed-up and verdict against the baseline."""
    layout = STUDIES[study]
    between, metrics = layout["between"], layout["metrics"]
    keys = [k for k in group_keys(study) if table[k].nunique() > 1 or k in ("model", "device")]
    head = [k.capitalize() for k in keys] + [between.capitalize(), "Launches"]
    head += [latex_escape(m.replace("_", " ")) + r" [95\% CI]" for m in metrics]
    head += ["Speed-up (cons.)", "Verdict"]
    # where blocks ran in looks, the verdict is theirs; the paper's overlap rule stands beside it
    looked = "verdict_look" in table and table["verdict_look"].astype(object).fillna("").ne("").any()
    if looked:
        head.append("95\\% CIs")
    no_verdict = ["--"] * (1 + looked)  # the verdict's cells where there is none
    body = []
    for _, r in table.iterrows():
        # a variant's parameters as the text reads them (batch=8, not batch~8)
        shown = {k: variant_label(str(r[k])) if k == "variant" else str(r[k]) for k in [*keys, between]}
        unstable = isinstance(r.get("warning"), str) and r["warning"] != ""
        cells = [latex_escape(shown[k]) for k in keys] + [
            latex_escape(shown[between]),
            f"{r['launches_ok']}/{r['launches']}" + (r"$^\dagger$" if unstable else ""),
        ]
        if r["launches_ok"] == 0:
            cells.append(
                rf"\multicolumn{{{len(metrics)}}}{{l}}{{" + latex_escape(f"no result: {r['note']}")[:90] + "}"
            )
            cells += ["--", *no_verdict]
        else:
            cells += [fmt_ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"]) for m in metrics]
            point = r.get("speedup", math.nan)
            if r[between] == baseline:
                cells += ["1.00 (ref.)", *no_verdict]
            elif isinstance(point, float) and not math.isnan(point):
                cons = r["speedup_conservative"]
                cells.append(f"{point:.2f} ({cons:.2f})" if not math.isnan(cons) else f"{point:.2f}")
                flipped = r.get("reproduced") in ("no", "not confirmed")
                look = r.get("verdict_look")
                look = f" (look {look})" if isinstance(look, str) and look else ""
                cells.append(latex_escape(r["verdict"] + look) + (r"$^\ddagger$" if flipped else ""))
                if looked:
                    cells.append(intervals_wording(r["paper_verdict"]).removeprefix("CIs "))
            else:
                cells += ["--", *no_verdict]
        body.append(cells)
    colspec = "l" * (len(keys) + 1) + "r" + "l" * (len(metrics) + 2 + looked)
    if looked:
        alpha = table["verdict_alpha"].max()
        caption += " " + caption_text("study_parts.sequential", alpha=alpha, alpha_pct=100 * alpha)
    if "reproduced" in table and table["reproduced"].isin(["no", "not confirmed"]).any():
        caption += " " + caption_text("study_parts.not_reproduced")
    if "warning" in table and table["warning"].astype(object).fillna("").ne("").any():
        caption += " " + caption_text("study_parts.warning")
    return booktabs(colspec, head, body, caption + hosts_sentence(table), label)


def hosts_sentence(table: pd.DataFrame, subject: str = "Launches ran on") -> str:
    """' Launches ran on <host>.' for a caption: which machine the numbers are from (none where
    the table has no hosts)."""
    hosts = launch_hosts(table)
    return " " + latex_escape(f"{subject} {' and '.join(hosts)}.") if hosts else ""


def language_latex(table: pd.DataFrame, caption: str) -> str:
    parts = [
        p for p in ROW_PARTS if f"{p}_difference_ms" in table and table[f"{p}_difference_ms"].notna().any()
    ]
    head = [
        "Model",
        "Device",
        "Metric",
        "Native ms",
        "ORT-Python ms",
        "Difference [90\\% CI]",
        "Welch $p$",
        "Verdict",
        "Equivalence",
    ]
    paired = bool("paired_lo_pct" in table and table["paired_lo_pct"].notna().any())
    if paired:
        head.append("Paired by round [90\\% CI]")
    head += [ROW_PART_HEADS[p] for p in parts]
    body, shown = [], set()
    for _, r in table.iterrows():
        cells = [
            r["model"],
            r["device"],
            latex_escape(r["metric"]),
            f"{r['native']:.1f}",
            f"{r['ort_python']:.1f}",
            f"{r['difference_pct']:+.1f}\\% [{r['difference_lo_pct']:+.1f}, {r['difference_hi_pct']:+.1f}]",
            f"{r['welch_p']:.3g}",
            r["verdict"] + (r"$^\dagger$" if across_hosts(r) else ""),
            _equivalence_cell(r),
        ]
        if paired:
            cells.append(_paired_cell(r))
        key = (r["model"], r["device"], r["set"])
        for part in parts:  # one value per pair of cells: on its first metric's row
            ms, lo, hi = (r[column] for column in difference_columns(part))
            cells.append("" if key in shown or math.isnan(ms) else f"{ms:+.2f} [{lo:+.2f}, {hi:+.2f}]")
        shown.add(key)
        body.append(cells)
    shown_parts = {
        "paired": paired,
        "per_row": bool(parts),
        "row_parts": len(parts) > 1,
        "across_hosts": any(across_hosts(r) for _, r in table.iterrows()),
    }
    caption += "".join(" " + CAPTIONS["language_parts"][part] for part, shown in shown_parts.items() if shown)
    colspec = "lllrrrrll" + "l" * paired + "r" * len(parts)
    return booktabs(colspec, head, body, caption + hosts_sentence(table), "tab:language")


def _equivalence_cell(r) -> str:
    """'equivalent', or 'not shown (n=40)' with the launches per side it would take at the
    observed spread ('not shown' alone when the observed difference already exceeds the margin)."""
    if r["equivalence"] != "not shown":
        return r["equivalence"]
    n = r["equivalence_launches"]
    return f"not shown (n={n:.0f})" if n <= COUNT_LIMIT else "not shown"


def _paired_cell(r) -> str:
    """'[-2.6, +1.7] equivalent (15 pairs)': the paired interval in percent, its verdict at the
    margin and the pairs it rests on (the Welch cell's n is the launches it would take); where not
    shown, also the pairs it would take at the observed spread ('15 pairs, 31 needed')."""
    if math.isnan(r["paired_lo_pct"]):
        return "too few pairs"
    interval = f"[{r['paired_lo_pct']:+.1f}, {r['paired_hi_pct']:+.1f}]"
    pairs = f"{r['n_pairs']:.0f} pairs"
    needed = r.get("pairs_for_equivalence", math.nan)
    if r["paired_equivalence"] == "not shown" and needed <= COUNT_LIMIT:
        pairs += f", {needed:.0f} needed"
    return f"{interval} {r['paired_equivalence']} ({pairs})"


def simple_latex(table: pd.DataFrame, columns: dict, caption: str, label: str) -> str:
    """A booktabs table of `columns` ({column: header}), values formatted as they are."""
    head = [latex_escape(h) for h in columns.values()]
    body = [[latex_escape(str(r[c])) for c in columns] for _, r in table.iterrows()]
    return booktabs("l" * len(columns), head, body, caption, label)


def plain_caption_latex(table: pd.DataFrame, columns: dict, caption: str, label: str) -> str:
    """simple_latex with a caption written as plain text (underscores escaped) and the sentence
    naming the hosts the table's launches ran on."""
    return simple_latex(table, columns, caption.replace("_", "\\_") + hosts_sentence(table), label)


def batch_operator_latex(table: pd.DataFrame, top: int = 5, by: str = "optimizer") -> str:
    """The `top` operator types by |extra ms| per model and `by` (ORT: the export; PyTorch: the
    runtime), and the summary rows."""
    shown = pd.concat(
        part
        for _, group in table.groupby(["model", by])
        for part in (
            group[~group["op_type"].isin(SUMMARY_ROWS)].head(top),
            group[group["op_type"].isin(SUMMARY_ROWS)],
        )
    )
    ort = by == "optimizer"
    shown = shown.assign(
        # Inductor names a kernel after every operation it fused: the first ones say enough
        op_type=[op if len(op) <= 40 else op[:38] + "..." for op in shown["op_type"]],
        variant=[("stock" if v == "none" else v.replace("_", " ")) if ort else v for v in shown[by]],
        alone=[f"{m:.2f}" for m in shown["ms_per_row_alone"]],
        batched=[f"{m:.2f}" for m in shown["ms_per_row_batched"]],
        ratio=["--" if math.isnan(r) else f"{r:.2f}x" for r in shown["ratio"]],
        extra=[f"{m:+.2f}" for m in shown["extra_ms_per_row"]],
        share=["--" if math.isnan(s) else fmt_pct(s) for s in shown["share_of_extra"]],
    )
    columns = {
        "model": "Model",
        "variant": "Export" if ort else "Runtime",
        "op_type": "Operator",
        "alone": "Alone",
        "batched": "Batched",
        "ratio": "Ratio",
        "extra": "Extra ms",
        "share": "Of the change",
    }
    if "gflops_alone" in shown:  # the operators whose work is known: the rate each achieved
        shown["rate"] = [
            "" if math.isnan(a) else f"{a:.0f} / {b:.0f}"
            for a, b in zip(shown["gflops_alone"], shown["gflops_batched"])
        ]
        columns["rate"] = "GFLOP/s"
    batch = int(table["batch"].iloc[0])
    which = "batch_operators_ort" if ort else "batch_operators_torch"
    caption = caption_text(which, batch=batch, top=top)
    return simple_latex(
        shown,
        columns,
        caption + hosts_sentence(table, "Measured on"),
        "tab:batch-operators" if ort else "tab:torch-batch-operators",
    )


def operator_latex(table: pd.DataFrame) -> str:
    shown = table.assign(
        ms=["--" if math.isnan(m) else f"{m:.2f}" for m in table["ms_per_row"]],
        pct=[fmt_pct(s) if s >= 0.01 else "<1%" for s in table["share"]],
    )
    caption = caption_text("ort_operators") + hosts_sentence(table, "Measured on")
    return simple_latex(
        shown,
        {"model": "Model", "op_type": "Operator", "ms": "ms per row", "pct": "Share"},
        caption,
        "tab:ort-operators",
    )


def _speedup(point: float, conservative: float, verdict: str) -> str:
    """'1.32x (1.05) faster'; without the bound where the intervals leave it undefined."""
    if math.isnan(point):
        return "--"
    bound = "" if math.isnan(conservative) else f" ({conservative:.2f})"
    return f"{point:.2f}x{bound} {verdict}"


def gap_latex(gap: pd.DataFrame, set_name: str) -> str:
    shown = gap.assign(
        p50=[fmt_ci(r.p50_ms, r.p50_ms_lo, r.p50_ms_hi) for r in gap.itertuples()],
        speedup=[f"{s:.2f}x" for s in gap["speedup_vs_eager"]],
        saves=["--" if math.isnan(s) else f"{s:.1f}" for s in gap["saves_ms"]],
        share=[fmt_pct(s) for s in gap["share_of_gap"]],
        ceiling=[
            fmt_pct(r.fraction_of_ceiling)
            if math.isnan(r.fraction_in_launch)
            else fmt_pct(r.fraction_in_launch, r.fraction_in_launch_lo, r.fraction_in_launch_hi)
            for r in gap.itertuples()
        ],
    )
    columns = {
        "model": "Model",
        "step": "Step",
        "adds": "What the step adds",
        "p50": "p50 ms [95% CI]",
        "speedup": "vs eager",
        "saves": "Saves ms",
        "share": "Of the eager-ORT gap",
        "ceiling": "Of GEMM ceiling",
    }
    caption = caption_text("decomposition_gap", set_name=set_name) + hosts_sentence(gap)
    return simple_latex(shown, columns, caption, "tab:decomposition-gap")


def _gate_cells(table: pd.DataFrame) -> dict[str, list[str]]:
    """The fidelity gate's columns as the fidelity and sweep tables print them."""
    return {
        "agreement": [
            f"{100 * a:.1f}% [{100 * lo:.2f}, {100 * hi:.2f}]"  # two places: 98.96 must not print as 99.0
            for a, lo, hi in zip(table["preference_agreement"], table["agreement_lo"], table["agreement_hi"])
        ],
        "delta": [f"{m:.3g} / {x:.3g}" for m, x in zip(table["mean_abs_delta"], table["max_abs_delta"])],
    }


def _resolution_sentence(gates: pd.DataFrame, min_agreement: float) -> str:
    pairs, lo, needed = gate_resolution(gates, min_agreement)
    return " " + caption_text(
        "gate_resolution", pairs=pairs, lo_pct=100 * lo, needed=needed, min_agreement_pct=100 * min_agreement
    )


def fidelity_latex(fidelity: pd.DataFrame, min_agreement: float) -> str:
    gated_sets = sorted(set(fidelity["set"]) - {POOLED_SET})
    pooled = (fidelity["set"] == POOLED_SET).any()
    if pooled:  # each set's own gate stays in the CSV; the paper shows the timed set and the pool
        fidelity = fidelity[fidelity["headline"] | (fidelity["set"] == POOLED_SET)]
    shown = fidelity.assign(
        **_gate_cells(fidelity),
        **{
            against: [
                _speedup(*values)
                for values in zip(
                    fidelity[f"speedup_vs_{against}_fp32"],
                    fidelity[f"conservative_vs_{against}_fp32"],
                    fidelity[f"verdict_vs_{against}_fp32"],
                )
            ]
            for against in ("own", "ort")
        },
    )
    columns = {
        "model": "Model",
        "step": "Variant",
        **({"set": "Set"} if fidelity["set"].nunique() > 1 else {}),
        "pairs": "Pairs",
        "agreement": "Preference agrees",
        "delta": "Score change, mean / max",
        "gate": "Gate",
        "own": "p50 vs own fp32 (cons.)",
        "ort": "p50 vs fp32 ORT (cons.)",
    }
    caption = (
        caption_text("fidelity", min_agreement_pct=100 * min_agreement)
        + _resolution_sentence(fidelity, min_agreement)
        + (" " + caption_text("fidelity_pooled", sets=", ".join(gated_sets)) if pooled else "")
    ) + hosts_sentence(fidelity, "Gates and launches ran on")
    return simple_latex(shown, columns, caption, "tab:fidelity")


def sweep_latex(sweep: pd.DataFrame, min_agreement: float) -> str:
    setting_keys = [k for k in ("weight_type", "per_channel", "reduce_range", "matmuls") if k in sweep]
    shown = sweep.assign(
        setting=[
            ", ".join(f"{k}={str(v).lower()}" for k, v in zip(setting_keys, values))
            + (" (timed)" if timed else "")
            for *values, timed in sweep[[*setting_keys, "timed"]].itertuples(index=False)
        ],
        **_gate_cells(sweep),
    )
    columns = {
        "model": "Model",
        "setting": "int8 setting",
        "quantized_matmuls": "MatMuls in int8",
        "pairs": "Pairs",
        "agreement": "Preference agrees",
        "delta": "Score change, mean / max",
        "gate": "Gate",
    }
    caption = (
        caption_text("int8_sweep", min_agreement_pct=100 * min_agreement)
        + _resolution_sentence(sweep, min_agreement)
    ) + hosts_sentence(sweep, "Gates ran on")
    return simple_latex(shown, columns, caption, "tab:int8-sweep")


def thread_latex(table: pd.DataFrame) -> str:
    shown = table.assign(
        alone=[f"{m:.1f}" for m in table["alone_ms_per_row"]],
        batched=[f"{m:.1f}" for m in table["batched_ms_per_row"]],
        **{c: [f"{r:.2f}x" for r in table[c]] for c in RATIOS},
    )
    caption = caption_text("batch_threads", batch=int(table["batch"].iloc[0])) + hosts_sentence(
        table, "Measured on"
    )
    columns = {"model": "Model", "setting": "Setting", "alone": "Alone", "batched": "Batched"}
    columns |= {c: header for c, header in RATIOS.items()}
    return simple_latex(shown, columns, caption, "tab:batch-threads")


def language_caption(margin: float) -> str:
    return caption_text("language", margin_pct=margin * 100)


REPLICATION_COLUMNS = {
    "model": "Model",
    "device": "Device",
    "metric": "Metric",
    "candidate": "Runtime",
    "baseline": "vs",
    "verdict": "Verdict (overlap rule)",
    "launches": "Launches",
    "reproduced": "Reproduced",
    "disagreeing": "Disagreeing",
}


def replication_latex(table: pd.DataFrame, baseline: str, headline_set: str) -> str:
    """The replication table's verdicts against the baseline (the CSV keeps every pair)."""
    shown = table[table["baseline"] == baseline]
    caption = caption_text("replication", baseline=baseline, headline_set=headline_set)
    return plain_caption_latex(shown, REPLICATION_COLUMNS, caption, "tab:replication")


BEST_RUNTIME_COLUMNS = {
    "model": "Model",
    "best": "Best CPU runtime",
    "over_baseline_text": "Over the baseline",
    "runner_up": "Runner-up",
    "over_runner_up_text": "Over the runner-up",
    "of_ceiling_text": "Of the ceiling probed in its launches [95% CI]",
}


def _standing_cell(point: float, paired: float, lo: float, hi: float, shows) -> str:
    """'1.62x (paired 1.60x [1.49, 1.91]), faster (CIs apart)': a speed-up, the same paired by
    round with its interval, what the comparison shows; a dash where there is no comparison (the
    best is the baseline)."""
    if not isinstance(shows, str):
        return "--"
    interval = "" if math.isnan(lo) else f" (paired {paired:.2f}x [{lo:.2f}, {hi:.2f}])"
    return f"{point:.2f}x{interval}, {shows}"


def best_runtime_latex(table: pd.DataFrame, baseline: str, headline_set: str) -> str:
    """The best CPU runtime per model and how far ahead it is (tables.best_runtime_table)."""
    shown = table.assign(
        **{
            f"over_{side}_text": [
                _standing_cell(
                    r.get(f"over_{side}", math.nan),
                    r.get(f"over_{side}_paired", math.nan),
                    r.get(f"over_{side}_paired_lo", math.nan),
                    r.get(f"over_{side}_paired_hi", math.nan),
                    r.get(f"over_{side}_shows"),
                )
                for _, r in table.iterrows()
            ]
            for side in ("baseline", "runner_up")
        }
    )
    columns = BEST_RUNTIME_COLUMNS
    if "of_ceiling" in table:
        shown["of_ceiling_text"] = [
            f"{fmt_pct(r.of_ceiling, r.of_ceiling_lo, r.of_ceiling_hi)} of {r.probed_ceiling_gflops:.0f} GFLOP/s"
            if not math.isnan(r.of_ceiling)
            else "--"
            for r in table.itertuples()
        ]
    else:  # no launch probed the ceiling
        columns = {k: v for k, v in columns.items() if k != "of_ceiling_text"}
    caption = caption_text("best_runtime", headline_set=headline_set, baseline=baseline)
    if "of_ceiling_text" in columns:
        caption += " " + caption_text("best_runtime_ceiling")
    return plain_caption_latex(shown, columns, caption, "tab:best_runtime")


ROOFLINE_COLUMNS = {
    "model": "Model",
    "runtime": "Runtime",
    "launches": "Launches",
    "achieved": "Achieved GFLOP/s [95% CI]",
    "ceiling": "GEMM ceiling GFLOP/s",
    "fraction": "Of ceiling",
    "in_launch": "Of ceiling probed in each launch [95% CI]",
}


def roofline_latex(table: pd.DataFrame) -> str:
    shown = table.assign(
        achieved=[fmt_ci(r.achieved_gflops, r.achieved_lo, r.achieved_hi) for r in table.itertuples()],
        ceiling=[f"{r.ceiling_gflops:.1f} ({r.ceiling_library})" for r in table.itertuples()],
        fraction=[fmt_pct(f) for f in table["fraction_of_ceiling"]],
        in_launch=[
            fmt_pct(r.fraction_in_launch, r.fraction_in_launch_lo, r.fraction_in_launch_hi)
            for r in table.itertuples()
        ],
    )
    caption = caption_text("roofline") + hosts_sentence(table)
    return simple_latex(shown, ROOFLINE_COLUMNS, caption, "tab:roofline")


def ceiling_gap_latex(table: pd.DataFrame) -> str:
    """Each model's parts, its export, ceiling, matrix rate and best runtime on its first row."""
    first = ~table["model"].duplicated()
    best = [
        f"{r.best_runtime} {fmt_pct(r.best_of_ceiling, r.best_of_ceiling_lo, r.best_of_ceiling_hi)}"
        if "best_runtime" in table and isinstance(r.best_runtime, str)
        else "--"
        for r in table.itertuples()
    ]
    shown = table.assign(
        model=[
            f"{r.model} ({'stock' if r.export == 'none' else r.export.replace('_', ' ')})" if is_first else ""
            for r, is_first in zip(table.itertuples(), first)
        ],
        rates=[
            f"{r.ceiling_gflops:.0f} / {r.matrix_gflops:.0f}" if f else ""
            for r, f in zip(table.itertuples(), first)
        ],
        best=[b if f else "" for b, f in zip(best, first)],
        ms=[f"{m:.2f}" for m in table["ms_per_row"]],
        pct=[f"{100 * s:.1f}%" for s in table["share"]],
    )
    columns = {
        "model": "Model (export)",
        "part": "Part of a row's time",
        "ms": "ms per row",
        "pct": "Share",
        "rates": "Ceiling / matrix GFLOP/s",
        "best": "Best runtime, of ceiling in launches",
    }
    caption = caption_text("ceiling_gap") + hosts_sentence(table, "Measured on")
    return simple_latex(shown, columns, caption, "tab:ceiling-gap")
