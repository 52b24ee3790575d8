"""Tidy tables from raw launch files, and the paper's LaTeX tables from tidy tables.

Statistics never read raw launch files: launch_table() builds the one tidy table they use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from .cells import parse_params

LAUNCH_COLUMNS = [
    "study",
    "model",
    "device",
    "runtime",
    "params",
    "launch",
    "status",
    "reason",
    "p50_ms",
    "p95_ms",
    "mean_ms",
    "n_rows",
    "max_abs_err",
    "load_s",
    "threads",
    "device_name",
    "cpu",
    "git_commit",
]


def launch_row(record: dict) -> dict:
    cell, metrics, prov = record["cell"], record.get("metrics", {}), record.get("provenance", {})
    row = {k: cell[k] for k in ("study", "model", "device", "runtime", "params", "launch")}
    row |= parse_params(cell["params"])
    row |= {"status": record["status"], "reason": record.get("reason") or ""}
    row |= {
        k: metrics.get(k, math.nan)
        for k in ("p50_ms", "p95_ms", "mean_ms", "n_rows", "max_abs_err", "load_s")
    }
    row |= {
        "threads": record["settings"]["threads"],
        "device_name": prov.get("device_name"),
        "cpu": prov.get("cpu"),
        "git_commit": prov.get("git_commit"),
    }
    return row


def launch_table(paths: list[str | Path]) -> pd.DataFrame:
    """One row per launch file (any status), with the cell's parameters as columns."""
    rows = [launch_row(json.loads(Path(p).read_text())) for p in paths]
    df = pd.DataFrame(rows)
    extra = [c for c in df.columns if c not in LAUNCH_COLUMNS]
    return df[LAUNCH_COLUMNS[:5] + extra + LAUNCH_COLUMNS[5:]]


def fmt_ci(mean: float, lo: float, hi: float, digits: int = 1) -> str:
    if math.isnan(mean):
        return "--"
    if math.isnan(lo):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def latency_rows(summary: pd.DataFrame, comparisons: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The main latency table: one row per model x device x runtime x set."""
    vs = comparisons[(comparisons["baseline"] == baseline) & (comparisons["metric"] == "p50_ms")]
    vs = vs.set_index(["model", "device", "set", "candidate"])
    rows = []
    for _, s in summary.iterrows():
        key = (s["model"], s["device"], s["set"], s["runtime"])
        row = {
            "model": s["model"],
            "device": s["device"],
            "set": s["set"],
            "runtime": s["runtime"],
            "launches_ok": s["launches_ok"],
            "launches": s["launches"],
            "p50_ms": s["p50_ms"],
            "p50_lo": s["p50_ms_lo"],
            "p50_hi": s["p50_ms_hi"],
            "p95_ms": s["p95_ms"],
            "p95_lo": s["p95_ms_lo"],
            "p95_hi": s["p95_ms_hi"],
            "p50_cv": s["p50_ms_cv"],
            "note": s["reasons"] if s["launches_ok"] == 0 else "",
        }
        if key in vs.index:
            c = vs.loc[key]
            row |= {
                f"speedup_vs_{baseline}": c["speedup"],
                f"speedup_conservative_vs_{baseline}": c["speedup_conservative"],
                f"welch_p_vs_{baseline}": c["welch_p"],
                f"verdict_vs_{baseline}": c["verdict"],
            }
        rows.append(row)
    return pd.DataFrame(rows)


def _latex_escape(text: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("$", r"\$"),
    ):
        text = text.replace(a, b)
    return text


def latency_latex(table: pd.DataFrame, baseline: str, caption: str) -> str:
    """A booktabs table: p50 and p95 with 95% CIs, speed-ups and verdicts against the baseline."""
    head = (
        r"Model & Device & Set & Runtime & Launches & p50 ms [95\% CI] & p95 ms [95\% CI] & "
        r"Speed-up (cons.) & Verdict \\"
    )
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\begin{tabular}{llllrllll}",
        r"\toprule",
        head,
        r"\midrule",
    ]
    for _, r in table.iterrows():
        if r["launches_ok"] == 0:
            p50, p95 = r"\multicolumn{2}{l}{" + _latex_escape(f"no result: {r['note']}")[:90] + "}", None
        else:
            p50, p95 = (
                fmt_ci(r["p50_ms"], r["p50_lo"], r["p50_hi"]),
                fmt_ci(r["p95_ms"], r["p95_lo"], r["p95_hi"]),
            )
        point = r.get(f"speedup_vs_{baseline}", math.nan)
        if r["runtime"] == baseline and r["launches_ok"] > 0:
            speed, verdict = "1.00 (ref.)", "--"
        elif isinstance(point, float) and not math.isnan(point):
            cons = r[f"speedup_conservative_vs_{baseline}"]
            speed = f"{point:.2f} ({cons:.2f})" if not math.isnan(cons) else f"{point:.2f}"
            verdict = r[f"verdict_vs_{baseline}"]
        else:
            speed, verdict = "--", "--"
        cells = [r["model"], r["device"], r["set"], r["runtime"], f"{r['launches_ok']}/{r['launches']}", p50]
        if p95 is not None:
            cells.append(p95)
        cells += [speed, verdict]
        lines.append(
            " & ".join(
                _latex_escape(str(c)) if not str(c).startswith("\\multicolumn") else str(c) for c in cells
            )
            + r" \\"
        )
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{caption}}}",
        r"\label{tab:latency}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
