"""Tidy tables from raw launch files, and the paper's LaTeX tables from tidy tables.

Statistics never read raw launch files: launch_table() builds the one tidy table they use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .cells import parse_params
from .provenance import host_label
from .stats import COUNT_LIMIT, host_cell, launch_hosts, per_row_difference, per_row_median

CELL_KEYS = ["study", "model", "device", "runtime", "params", "launch"]

# What each study compares: launches of different `between` values within a model x device x
# set (x variant) group, on these per-launch metrics (lower is better; the first one decides
# speed-ups and verdicts). Metrics named in `report_only` (higher is better) get intervals but no
# comparisons.
STUDIES = {
    "latency": {"between": "runtime", "metrics": ["p50_ms", "p95_ms"]},
    # first_pass_us: the first pass over the set, where the tokenizers' word caches are cold.
    "tokenizer": {"between": "runtime", "metrics": ["mean_us", "p50_us", "first_pass_us"]},
    "zerocopy": {"between": "variant", "metrics": ["p50_ms", "p95_ms"]},
    "compile": {
        "between": "variant",
        "metrics": ["p50_ms", "p95_ms", "first_call_s", "recompiles", "miss_max_ms"],
        "report_only": ["first_call_s", "recompiles", "miss_max_ms"],
    },
    "gemm": {"between": "runtime", "metrics": ["layer_ms", "gflops"], "report_only": ["gflops"]},
    # row_ms (wall time per row over the whole set) is 1 / throughput: its speed-up against
    # batch size 1 is the throughput ratio.
    "batching": {
        "between": "variant",
        "metrics": ["row_ms", "throughput_rps", "padding_waste", "batch_p50_ms", "batch_p95_ms"],
        "report_only": ["throughput_rps", "padding_waste", "batch_p50_ms", "batch_p95_ms"],
    },
    # The same for concurrency: against one client on a shared engine; per-request latency
    # percentiles show the queueing.
    "concurrency": {
        "between": "variant",
        "metrics": ["row_ms", "throughput_rps", "p50_ms", "p95_ms"],
        "report_only": ["throughput_rps", "p50_ms", "p95_ms"],
    },
    # Steps from eager to ONNX Runtime and past fp32: each runtime x variant is one step
    # (e.g. "ort_python graph=basic"), compared with every other step of the same model.
    "decomposition": {
        "between": "step",
        "within": ["model", "device", "set"],
        "metrics": ["p50_ms", "p95_ms", "gflops"],
        "report_only": ["gflops"],
    },
}
GROUP_KEYS = ["model", "device", "set", "variant", "runtime"]


def compared_metrics(study: str) -> list[str]:
    layout = STUDIES[study]
    return [m for m in layout["metrics"] if m not in layout.get("report_only", [])]


def group_keys(study: str) -> list[str]:
    """What a study's comparisons stay within (every key but the compared one, unless it says)."""
    layout = STUDIES[study]
    return layout.get("within") or [k for k in GROUP_KEYS if k != layout["between"]]


def step_name(runtime: str, params: dict) -> str:
    """A runtime and its variant as one name: 'ort_python graph=basic' (the decomposition's steps)."""
    return " ".join([runtime, *(f"{k}={v}" for k, v in params.items() if k != "set")])


def launch_row(record: dict) -> dict:
    """One launch as a flat row: cell keys, parameters, status, scalar metrics, provenance."""
    cell, metrics, prov = record["cell"], record.get("metrics", {}), record.get("provenance", {})
    params = parse_params(cell["params"])
    row = {k: cell[k] for k in CELL_KEYS} | params
    row["variant"] = "+".join(f"{k}~{v}" for k, v in params.items() if k != "set") or "-"
    row["step"] = step_name(cell["runtime"], params)
    row |= {"status": record["status"], "reason": record.get("reason") or ""}
    row |= {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    row |= {
        "started_at": record.get("started_at"),
        "threads": record["settings"]["threads"],
        "device_name": prov.get("device_name"),
        "cpu": prov.get("cpu"),
        "host": host_label(prov),
        "git_commit": prov.get("git_commit"),
    }
    return row


def launch_table(paths: list[str | Path]) -> pd.DataFrame:
    """One row per launch file (any status), with `order`: the position it ran in (1 = first)."""
    table = pd.DataFrame([launch_row(json.loads(Path(p).read_text())) for p in paths])
    table["order"] = table["started_at"].rank(method="first").astype("Int64")
    return table


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


def replication_keys(study: str) -> tuple[str, ...]:
    """What a study's comparisons are within, besides model and set."""
    return tuple(k for k in group_keys(study) if k not in ("model", "set"))


def study_table(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    study: str,
    baseline: str,
    headline_set: str | None = None,
) -> pd.DataFrame:
    """One row per cell: launches, each metric with its CI, and the first metric's speed-up,
    Welch p and verdict against the baseline; on the headline set, whether that verdict was
    reproduced on the other sets and the other model (`reproduced`, `disagreeing`)."""
    layout = STUDIES[study]
    between, first = layout["between"], layout["metrics"][0]
    keys = group_keys(study)
    vs = comparisons[(comparisons["baseline"] == baseline) & (comparisons["metric"] == first)]
    vs = vs.set_index([*keys, "candidate"])
    rows = []
    for _, s in summary.iterrows():
        row = {k: s[k] for k in [*keys, between, "launches_ok", "launches"]}
        for m in layout["metrics"]:
            row |= {m: s[m], f"{m}_lo": s[f"{m}_lo"], f"{m}_hi": s[f"{m}_hi"], f"{m}_cv": s[f"{m}_cv"]}
        row["launches_needed"] = s.get(f"{first}_launches_needed", math.nan)
        row["host"] = s.get("host", "")
        row["warning"] = s.get("warning", "")
        # Launches left out of the statistics (mismatch, oom, timeout ...) are listed, never hidden.
        if s["launches_ok"] == 0:
            row["note"] = s["reasons"]
        elif s["launches_ok"] < s["launches"]:
            row["note"] = f"left out: {s['statuses']} ({s['reasons']})"
        else:
            row["note"] = ""
        key = (*[s[k] for k in keys], s[between])
        if key in vs.index:
            c = vs.loc[key]
            row |= {
                "speedup": c["speedup"],
                "speedup_conservative": c["speedup_conservative"],
                "speedup_boot_lo": c.get("speedup_boot_lo", math.nan),
                "speedup_boot_hi": c.get("speedup_boot_hi", math.nan),
                "speedup_paired_lo": c.get("speedup_paired_lo", math.nan),
                "speedup_paired_hi": c.get("speedup_paired_hi", math.nan),
                "welch_p": c["welch_p"],
                "verdict": c["verdict"],
            }
            if _across_hosts(c):
                row["warning"] = "; ".join(w for w in (row["warning"], "compared across hosts") if w)
        rows.append(row)
    table = pd.DataFrame(rows)
    if headline_set is None or comparisons.empty:
        return table
    from .replication import replication_table

    checked = replication_table(comparisons, headline_set, replication_keys(study))
    if checked.empty:
        return table
    checked = checked[(checked["metric"] == first) & (checked["baseline"] == baseline)]
    checked = checked.rename(columns={"candidate": between, "headline_set": "set"})
    on = ["model", *replication_keys(study), "set", between]
    flags = checked[[*on, "reproduced", "disagreeing"]]
    return table.merge(flags, on=on, how="left")


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
        rf"\caption{{{caption}}}",
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
            cells += ["--", "--"]
        else:
            cells += [fmt_ci(r[m], r[f"{m}_lo"], r[f"{m}_hi"]) for m in metrics]
            point = r.get("speedup", math.nan)
            if r[between] == baseline:
                cells += ["1.00 (ref.)", "--"]
            elif isinstance(point, float) and not math.isnan(point):
                cons = r["speedup_conservative"]
                cells.append(f"{point:.2f} ({cons:.2f})" if not math.isnan(cons) else f"{point:.2f}")
                flipped = r.get("reproduced") == "no"
                cells.append(latex_escape(r["verdict"]) + (r"$^\ddagger$" if flipped else ""))
            else:
                cells += ["--", "--"]
        body.append(cells)
    colspec = "l" * (len(keys) + 1) + "r" + "l" * (len(metrics) + 2)
    if "reproduced" in table and (table["reproduced"] == "no").any():
        caption += (
            r" $^\ddagger$: not reproduced: the same comparison gave another verdict on a replication "
            r"set or the other model (the CSV names which, with launch counts)."
        )
    if "warning" in table and table["warning"].astype(object).fillna("").ne("").any():
        caption += (
            r" $^\dagger$: a warning (launch-to-launch variation above the threshold, a trend with launch "
            r"order, launches on more than one kind of host, or a comparison across hosts); the CSV gives "
            r"the warning and the launches the configured CI half-width would need."
        )
    return booktabs(colspec, head, body, caption + hosts_sentence(table), label)


def hosts_sentence(table: pd.DataFrame, subject: str = "Launches ran on") -> str:
    """' Launches ran on <host>.' for a caption: which machine the numbers are from (none where
    the table has no hosts)."""
    hosts = launch_hosts(table)
    return " " + latex_escape(f"{subject} {' and '.join(hosts)}.") if hosts else ""


def with_record_hosts(table: pd.DataFrame, records: list[dict], key: str = "model") -> pd.DataFrame:
    """`table` with a `host` column: the kinds of machine (provenance.host_label) of the records
    its rows come from, matched on `key`. For tables built from probe or gate records, which carry
    their provenance (a record without one names no host)."""
    if key not in table:  # an empty table
        return table
    hosts: dict[str, set[str]] = {}
    for record in records:
        hosts.setdefault(record[key], set()).add(host_label(record.get("provenance") or {}))
    return table.assign(host=[host_cell(hosts.get(k, ())) for k in table[key]])


LANGUAGE_PAIR = ("native", "ort_python")  # candidate, baseline: the same engine from C++ and Python
LANGUAGE_KEYS = ["model", "device", "set", "variant"]


# Per-row series a launch of the language pair records, in ms (name: metric, scale): the whole
# row, and where the runtime times them apart, its tokenizing and the engine's call.
ROW_PARTS = {"row": ("latencies_ms", 1.0), "tokenize": ("tokenize_us", 1e-3), "infer": ("infer_ms", 1.0)}


def difference_columns(part: str) -> list[str]:
    """A part's per-row difference and its interval bounds: row_difference_ms, ..._lo, ..._hi."""
    return [f"{part}_difference_ms{end}" for end in ("", "_lo", "_hi")]


ROW_DIFFERENCE_COLUMNS = [column for part in ROW_PARTS for column in difference_columns(part)]
# Each runtime's own tokenizing time in its launches (between model runs), beside the difference.
TOKENIZE_COLUMNS = [f"{runtime}_tokenize_us" for runtime in LANGUAGE_PAIR]


def row_differences(records: list[dict]) -> pd.DataFrame:
    """Per cell pair of the language table: stats.per_row_difference of native's ok launches
    against ORT-Python's, for the whole row (`row_difference_ms`, negative: native is faster per
    row, with its 95% bootstrap interval) and for its parts (`tokenize_difference_ms`,
    `infer_difference_ms`) from the launches that timed them apart; and each runtime's tokenizing
    time per row in its launches (`native_tokenize_us`, `ort_python_tokenize_us`: the median over
    rows of each row's median across launches)."""
    series: dict[tuple, dict[str, dict[str, list]]] = {}
    for record in records:
        row = launch_row(record)
        if row["status"] == "ok" and row["runtime"] in LANGUAGE_PAIR:
            parts = series.setdefault(
                tuple(row[k] for k in LANGUAGE_KEYS),
                {part: {r: [] for r in LANGUAGE_PAIR} for part in ROW_PARTS},
            )
            for part, (metric, scale) in ROW_PARTS.items():
                if metric in record["metrics"]:
                    parts[part][row["runtime"]].append([v * scale for v in record["metrics"][metric]])
    rows = []
    for key, parts in sorted(series.items()):
        row = dict(zip(LANGUAGE_KEYS, key))
        for part, by_runtime in parts.items():
            difference = per_row_difference(*(by_runtime[r] for r in LANGUAGE_PAIR))
            row |= dict(zip(difference_columns(part), difference))
        for runtime, launches in parts["tokenize"].items():
            row[f"{runtime}_tokenize_us"] = per_row_median(launches) * 1e3
        rows.append(row)
    return pd.DataFrame(rows, columns=[*LANGUAGE_KEYS, *ROW_DIFFERENCE_COLUMNS, *TOKENIZE_COLUMNS])


def language_table(comparisons: pd.DataFrame, differences: pd.DataFrame | None = None) -> pd.DataFrame:
    """The language-isolation rows: native vs ONNX Runtime from Python, same library and file;
    with `differences` (row_differences), the per-row difference beside each."""
    candidate, baseline = LANGUAGE_PAIR
    rows = comparisons[(comparisons["candidate"] == candidate) & (comparisons["baseline"] == baseline)]
    if differences is not None:
        rows = rows.merge(differences, on=LANGUAGE_KEYS, how="left")
    out = rows[
        [
            "model",
            "device",
            "set",
            "metric",
            "candidate_mean",
            "baseline_mean",
            "speedup",
            "speedup_conservative",
            "welch_p",
            "verdict",
            "difference_lo",
            "difference_hi",
            "equivalence",
            "equivalence_launches",
            "n_candidate",
            "n_baseline",
        ]
        + [
            c
            for c in ("paired_lo", "paired_hi", "paired_equivalence", "n_pairs", "pairs_for_equivalence")
            if c in rows
        ]
        + [c for c in ROW_DIFFERENCE_COLUMNS + TOKENIZE_COLUMNS if c in rows]
        + [column for column in ("host", "across_hosts") if column in rows]
    ].copy()
    out["difference_pct"] = (out["candidate_mean"] / out["baseline_mean"] - 1) * 100
    # the 90% intervals of the difference (two one-sided tests; Welch's, and paired by round where
    # the comparisons have it), in percent
    for column in ("difference_lo", "difference_hi", "paired_lo", "paired_hi"):
        if column in out:
            out[f"{column}_pct"] = out.pop(column) * 100
    return out.rename(columns={"candidate_mean": "native", "baseline_mean": "ort_python"})


# The language table's per-row columns: each part of a row whose difference was measured.
ROW_PART_HEADS = {"row": "Per row, ms [95\\% CI]", "tokenize": "Tokenizing, ms", "infer": "Engine call, ms"}


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
            r["verdict"] + (r"$^\dagger$" if _across_hosts(r) else ""),
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
    if paired:
        caption += (
            " Paired by round: the same test on the ratio of the native and ORT-Python launches that"
            " ran in the same round of the schedule (a t interval on the mean log ratio), which takes"
            " the machine's drift between rounds out of the comparison; where it shows no equivalence,"
            " the pairs that would at the observed mean and spread of the pairs' log ratios."
        )
    if parts:
        caption += (
            " Per row: the median over rows of native's minus ORT-Python's latency (each row's median"
            " across launches), with a 95\\% bootstrap interval over launches: a fixed cost per row"
            " shows here at every length."
        )
    if len(parts) > 1:
        caption += (
            " The same for the row's parts, timed apart in both runtimes: tokenizing (text to token"
            " ids) and the engine's call (input tensors, the session's run, the score out)."
        )
    if any(_across_hosts(r) for _, r in table.iterrows()):
        caption += r" $^\dagger$: native and ORT-Python launches from different kinds of host."
    colspec = "lllrrrrll" + "l" * paired + "r" * len(parts)
    return booktabs(colspec, head, body, caption + hosts_sentence(table), "tab:language")


def _across_hosts(row) -> bool:
    """Whether a comparison row pairs launches from different kinds of host (a bool column, or
    its text read back from CSV)."""
    return row.get("across_hosts") in (True, "True")


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


def variant_label(variant: str) -> str:
    """'batching~naive+batch~8' -> 'naive b=8', 'mode~shared+clients~4' -> 'shared c=4'; other
    variants as key=value pairs."""
    params = dict(part.split("~", 1) for part in variant.split("+") if "~" in part)
    if "mode" in params and "clients" in params:
        label = f"{params.pop('mode')} c={params.pop('clients')}"
        return " ".join([label, *(f"{k}={v}" for k, v in params.items())])
    if "batching" in params:
        label = f"{params.pop('batching')} b={params.pop('batch', '1')}"
        return " ".join([label, *(f"{k}={v}" for k, v in params.items())])
    return ", ".join(f"{k}={v}" for k, v in params.items()) or variant


def verdict_list(comparisons: pd.DataFrame, baseline: str, metric: str) -> pd.DataFrame:
    """One line per candidate against the baseline, e.g. 'naive b=8 vs none b=1: 0.13x [0.11,
    0.15], paired by round [0.12, 0.14], CIs apart': the speed-up, its own 95% interval (bootstrap
    over launches) and the same paired by launch round where there are, and whether the two cells'
    intervals overlap (the study's verdict)."""
    rows = comparisons[(comparisons["baseline"] == baseline) & (comparisons["metric"] == metric)].copy()
    if "speedup_paired_lo" not in rows:  # comparisons from before launches were paired
        rows["speedup_paired_lo"] = rows["speedup_paired_hi"] = math.nan
    apart = rows["verdict"].isin(["faster", "slower"])
    rows["statement"] = [
        f"{variant_label(r.candidate)} vs {variant_label(baseline)}: {r.speedup:.2f}x"
        + _interval_text("", r.speedup_boot_lo, r.speedup_boot_hi)
        + _interval_text("paired by round", r.speedup_paired_lo, r.speedup_paired_hi)
        + (", CIs apart" if a else ", CIs overlap")
        for r, a in zip(rows.itertuples(), apart)
    ]
    keep = [k for k in ("model", "device", "set", "runtime") if k in rows]
    columns = ["candidate", "baseline", "speedup", "speedup_boot_lo", "speedup_boot_hi"]
    columns += ["speedup_paired_lo", "speedup_paired_hi"]
    return rows[[*keep, *columns, "speedup_conservative", "verdict", "statement"]]


def _interval_text(name: str, lo: float, hi: float) -> str:
    """' [1.04, 1.14]', or ', paired by round [1.03, 1.16]' with a name; nothing without an interval."""
    if math.isnan(lo) or math.isnan(hi):
        return ""
    return f"{', ' + name if name else ''} [{lo:.2f}, {hi:.2f}]"


def with_padding_bound(verdicts: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Adds to each batching verdict what padding alone would predict: `padding_only`, the
    throughput ratio if a padded token cost what a real token costs in a row alone
    ((1 + baseline's waste) / (1 + candidate's waste)), and `per_padded_token`, the measured
    ratio over it (below 1: a batch costs more per padded token than its rows alone)."""
    keys = ["model", "device", "set", "runtime"]
    waste = summary[[*keys, "variant", "padding_waste"]]
    side = lambda who: waste.rename(columns={"variant": who, "padding_waste": f"waste_{who}"})
    out = verdicts.merge(side("candidate"), on=[*keys, "candidate"], how="left")
    out = out.merge(side("baseline"), on=[*keys, "baseline"], how="left")
    out["padding_only"] = (1 + out["waste_baseline"]) / (1 + out["waste_candidate"])
    out["per_padded_token"] = out["speedup"] / out["padding_only"]
    out["statement"] = [
        s if math.isnan(p) else f"{s} (padding alone: {p:.2f}x)"
        for s, p in zip(out["statement"], out["padding_only"])
    ]
    return out


# Each service against the engines it should at least match, at the same number of clients.
SERVICE_BASELINES = {"batching_server": ["ort_python", "native"], "fastapi": ["hf_eager"]}
# Variant keys that set the server up rather than its clients (a max_batch~1 server at c=8 is
# compared with the engines at c=8).
SERVER_SETTINGS = ("max_batch", "adaptive")


def service_verdicts(launches: pd.DataFrame, metric: str, checks) -> pd.DataFrame:
    """Each service (with each of its settings) against a shared in-process engine at the same
    concurrency, e.g. 'batching_server adaptive=on vs ort_python at shared c=8: 1.02x, CIs overlap'."""
    from .stats import compare_latency

    shared = launches[launches["variant"].str.startswith("mode~shared+")].copy()
    is_setting = lambda part: part.split("~")[0] in SERVER_SETTINGS
    parts = shared["variant"].str.split("+")
    shared["variant"] = parts.map(lambda ps: "+".join(p for p in ps if not is_setting(p)))
    settings = parts.map(lambda ps: " ".join(p.replace("~", "=") for p in ps if is_setting(p)))
    shared["who"] = (shared["runtime"] + " " + settings).str.strip()
    keys = ["model", "device", "set", "variant"]
    found = []
    for service, engines in SERVICE_BASELINES.items():
        for engine in engines:
            pair = shared[shared["runtime"].isin([service, engine])]
            if pair.empty:
                continue
            compared = compare_latency(pair, keys, "who", metric, checks)
            if not compared.empty:
                is_service = compared["candidate"].str.split(" ").str[0] == service
                found.append(compared[is_service & (compared["baseline"] == engine)])
    if not found:
        return pd.DataFrame(columns=[*keys, "candidate", "baseline", "speedup", "verdict", "statement"])
    rows = pd.concat(found, ignore_index=True)
    apart = rows["verdict"].isin(["faster", "slower"])
    rows["statement"] = [
        f"{c} vs {b} at {variant_label(v)}: {s:.2f}x, {'CIs apart' if a else 'CIs overlap'}"
        for c, b, v, s, a in zip(rows["candidate"], rows["baseline"], rows["variant"], rows["speedup"], apart)
    ]
    return rows[[*keys, "candidate", "baseline", "speedup", "speedup_conservative", "verdict", "statement"]]
