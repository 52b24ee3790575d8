"""The numbers the paper's text quotes, as LaTeX definitions written from the study tables.

The text never types a measured number: it writes \\rmnum{latency/deberta/cpu/native/speedup}
and gets whatever the last run measured (or a bold "??" where that cell has no result).
Keys: study / model / device / runtime [/ variant] / metric, on each study's headline set, and
study@set / ... the same on the study's other (replication) sets.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from rmbench.export.precision import gate_resolution
from rmbench.plan.studies import LANGUAGE_PAIR, STUDIES
from rmbench.probes.operators import SESSION_RUN, SUMMARY_ROWS, TOTAL, WHOLE_CALL
from rmbench.probes.provenance import launch_hosts
from rmbench.report.latex import latex_escape
from rmbench.report.tables import ROW_PARTS, difference_columns, variant_label
from rmbench.stats.across_launches import COUNT_LIMIT

# Digits shown per metric (anything else: 2).
DIGITS = {
    "p50_ms": 1,
    "p95_ms": 1,
    "row_ms": 1,
    "mean_us": 1,
    "p50_us": 1,
    "first_pass_us": 1,
    "first_call_s": 1,
    "recompiles": 0,
    "gflops": 0,
}
PREAMBLE = r"""% Written by the paper_numbers rule from paper/tables/*.csv: do not edit.
\makeatletter
\newcommand{\rmnum}[1]{\ifcsname rm@#1\endcsname\csname rm@#1\endcsname\else\textbf{??}\fi}
\newcommand{\rmset}[2]{\expandafter\def\csname rm@#1\endcsname{#2}}
\makeatother
"""


def _key_parts(row: pd.Series, study: str) -> list[str]:
    parts = [row["model"], row["device"]]
    if "runtime" in row and isinstance(row["runtime"], str):
        parts.append(row["runtime"].replace(" ", "-"))  # 'native optimizer=transformers' (latency)
    if "variant" in row and isinstance(row["variant"], str) and row["variant"] != "-":
        parts.append(variant_label(row["variant"]).replace(" ", "-"))
    if "step" in row and isinstance(row["step"], str):  # 'ort_python graph=all' -> ort_python-graph=all
        parts.append(row["step"].replace(" ", "-"))
    return [study, *parts]


def fidelity_numbers(table: pd.DataFrame) -> dict[str, str]:
    """fidelity/<model>/<step>/<name>: the gate's agreement (percent) with its interval, verdict
    and speed-ups on the study's headline set (fidelity@<set>/... on a set gated besides it);
    fidelity/<model>/<name>: the gate's share (min_agreement) and what its sample can show (pairs,
    the fewest a gate of the model scored; full_agreement_lo, the lower bound of full agreement
    over them; pairs_to_show, the pairs without a flip that would show the share)."""
    numbers = {}
    for (model, set_name, headline), rows in table.groupby(["model", "set", "headline"]):
        prefix = "fidelity" if headline else f"fidelity@{set_name}"
        share = float(rows["min_agreement"].max())
        pairs, full_lo, needed = gate_resolution(rows, share)
        numbers |= {
            f"{prefix}/{model}/min_agreement": _format(100 * share, 0),
            f"{prefix}/{model}/pairs": str(pairs),
            f"{prefix}/{model}/full_agreement_lo": _format(100 * full_lo, 1),
            f"{prefix}/{model}/pairs_to_show": str(needed),
        }
        for _, row in rows.iterrows():
            key = f"{prefix}/{model}/{row['step'].replace(' ', '-')}"
            values = {
                "agreement": _format(100 * row["preference_agreement"], 1),
                "agreement_lo": _format(100 * row["agreement_lo"], 2),
                "agreement_hi": _format(100 * row["agreement_hi"], 2),
                "flipped": str(row["flipped"]),
                "gate": row["gate"],
                "speedup_vs_own_fp32": _format(row.get("speedup_vs_own_fp32"), 2),
                "speedup_vs_ort_fp32": _format(row.get("speedup_vs_ort_fp32"), 2),
                "conservative_vs_ort_fp32": _format(row.get("conservative_vs_ort_fp32"), 2),
                "verdict_vs_ort_fp32": row.get("verdict_vs_ort_fp32"),  # the two steps' CIs apart or not
            }
            numbers |= {
                f"{key}/{name}": text for name, text in values.items() if isinstance(text, str) and text
            }
    return numbers


def sweep_numbers(table: pd.DataFrame) -> dict[str, str]:
    """int8_sweep/<model>/<name>: how many int8 settings passed the gate, and the best agreement."""
    numbers = {}
    for model, rows in table.groupby("model"):
        best = rows.loc[rows["preference_agreement"].idxmax()]
        numbers |= {
            f"int8_sweep/{model}/settings": str(len(rows)),
            f"int8_sweep/{model}/passed": str(int((rows["gate"] == "passed").sum())),
            f"int8_sweep/{model}/best_agreement": _format(100 * best["preference_agreement"], 1),
            f"int8_sweep/{model}/worst_agreement": _format(100 * rows["preference_agreement"].min(), 1),
            f"int8_sweep/{model}/best_matmuls": str(best["matmuls"]),
        }
    return numbers


def _pairs_needed(pairs: float) -> str:
    """The pairs the paired equivalence test would take, 'more than 1,000' where the observed ratio
    itself reaches the margin (stats.pairs_for_equivalence then returns its limit + 1)."""
    return f"more than {_format(COUNT_LIMIT, 0)}" if pairs > COUNT_LIMIT else _format(pairs, 0)


def language_numbers(table: pd.DataFrame) -> dict[str, str]:
    """language/<model>/<device>/<metric>/<name>: native against ORT-Python in percent (negative:
    native faster) with its 90% interval and the equivalence verdict, Welch's and paired by
    round (paired_ci, paired_equivalence, pairs, and pairs_needed: the pairs that would show
    equivalence at the observed spread); language/<model>/<device>/
    <part>_difference_ms and <part>_difference_ci: native's minus ORT-Python's time per row (part
    row), its tokenizing (tokenize) and the engine's call (infer), each with its 95% interval;
    language/<model>/<device>/<runtime>/tokenize_us: each runtime's tokenizing time per row."""
    numbers = {}
    for r in table.to_dict("records"):
        key = f"language/{r['model']}/{r['device']}"
        metric = f"{key}/{r['metric']}"
        numbers |= {
            f"{metric}/difference_pct": _signed(r["difference_pct"], 1),
            f"{metric}/difference_ci": _signed_interval(r["difference_lo_pct"], r["difference_hi_pct"], 1),
            f"{metric}/equivalence": r["equivalence"],
        }
        if "paired_lo_pct" in r:  # the same on launches paired by round
            numbers |= {
                f"{metric}/paired_ci": _signed_interval(r["paired_lo_pct"], r["paired_hi_pct"], 1),
                f"{metric}/paired_equivalence": r["paired_equivalence"],
                f"{metric}/pairs": _format(r["n_pairs"], 0),
                f"{metric}/pairs_needed": _pairs_needed(r.get("pairs_for_equivalence", math.nan)),
            }
        for part in ROW_PARTS:  # one per pair of cells, repeated on each metric's row
            ms, lo, hi = difference_columns(part)
            if ms in r:
                numbers |= {
                    f"{key}/{ms}": _signed(r[ms], 2),
                    f"{key}/{part}_difference_ci": _signed_interval(r[lo], r[hi], 2),
                }
        for runtime in LANGUAGE_PAIR:
            if f"{runtime}_tokenize_us" in r:
                numbers[f"{key}/{runtime}/tokenize_us"] = _format(r[f"{runtime}_tokenize_us"], 0)
    return {k: v for k, v in numbers.items() if v}


def batch_thread_numbers(table: pd.DataFrame) -> dict[str, str]:
    """batch_threads/<model>/<setting>/<ratio>: per thread setting, a batch's time per row against
    its rows alone, and each against the first (the project's) setting; and the batch size."""
    numbers = {}
    for r in table.itertuples():
        key = f"batch_threads/{r.model}/{r.setting}"
        numbers |= {
            f"batch_threads/{r.model}/batch": str(r.batch),
            f"{key}/batched_vs_alone": _format(r.batched_vs_alone, 2),
            f"{key}/alone_vs_reference": _format(r.alone_vs_reference, 2),
            f"{key}/batched_vs_reference": _format(r.batched_vs_reference, 2),
        }
    return numbers


def batch_operator_numbers(
    table: pd.DataFrame, study: str = "batch_operators", by: str = "optimizer"
) -> dict[str, str]:
    """<study>/<model>[/<variant>]/<name>: a batch's time per row against a row alone (total, the
    whole run, and the matrix products together), the operator type that adds the most with its
    share, and each operator type's ratio (<...>/op/<op_type>/ratio). The variant is ORT's export
    (optimizer=<export>, left out for the stock one) or the PyTorch runtime (by="runtime")."""
    numbers = {}
    for (model, variant), rows in table.groupby(["model", by]):
        ops = rows[~rows["op_type"].isin(SUMMARY_ROWS)]
        total = rows[rows["op_type"] == TOTAL].iloc[0]
        run = rows[rows["op_type"].isin([SESSION_RUN, WHOLE_CALL])]
        matrix = ops[ops["matrix_product"].astype(bool)]
        top = ops.loc[ops["extra_ms_per_row"].idxmax()]
        if by == "optimizer":
            key = f"{study}/{model}" + ("" if variant == "none" else f"/optimizer={variant}")
        else:
            key = f"{study}/{model}/{variant}"
        numbers |= {
            f"{key}/batch": str(int(total["batch"])),
            f"{key}/total_ratio": _format(total["ratio"], 2),
            f"{key}/run_ratio": _format(run["ratio"].iloc[0], 2) if len(run) else None,
            f"{key}/extra_ms": _format(total["extra_ms_per_row"], 2),
            f"{key}/matrix_ratio": _format(
                matrix["ms_per_row_batched"].sum() / matrix["ms_per_row_alone"].sum(), 2
            ),
            f"{key}/top_op": latex_escape(str(top["op_type"])),
            f"{key}/top_ratio": _format(top["ratio"], 2),
            f"{key}/top_extra_ms": _format(top["extra_ms_per_row"], 2),
            f"{key}/top_share": _format(100 * top["share_of_extra"], 0),
        }
        for op in ops.to_dict("records"):
            numbers[f"{key}/op/{op['op_type']}/ratio"] = _format(op["ratio"], 2)
            if not math.isnan(op.get("gflops_alone", math.nan)):  # its work known: work and rate
                numbers |= {
                    f"{key}/op/{op['op_type']}/gflops_alone": _format(op["gflops_alone"], 0),
                    f"{key}/op/{op['op_type']}/gflops_batched": _format(op["gflops_batched"], 0),
                    f"{key}/op/{op['op_type']}/work_ratio": _format(
                        op["gflop_per_row_batched"] / op["gflop_per_row_alone"], 2
                    ),
                    f"{key}/op/{op['op_type']}/rate_ratio": _format(
                        op["gflops_batched"] / op["gflops_alone"], 2
                    ),
                }
    return {k: v for k, v in numbers.items() if v}


def host_numbers(tables: list[pd.DataFrame]) -> dict[str, str]:
    """host/<device>: the kinds of machine the study tables' launches ran on, per device (the
    paper names the machine its numbers are from, and says so when they are from several)."""
    hosts: dict[str, set[str]] = {}
    for table in tables:
        if "host" not in table:  # a table from before hosts were recorded
            continue
        for device, rows in table.groupby("device"):
            hosts.setdefault(device, set()).update(launch_hosts(rows))
    return {f"host/{device}": latex_escape(" and ".join(sorted(h))) for device, h in hosts.items() if h}


def _format(value, digits: int) -> str | None:
    if isinstance(value, str):
        return value or None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return f"{value:,.{digits}f}".replace(",", "{,}")


def _signed(value, digits: int) -> str | None:
    """A difference with its sign, a LaTeX minus for negative ones."""
    text = _format(value, digits)
    if text is None or float(text.replace("{,}", "")) == 0:  # no sign on a zero, nor "-0.0"
        return text and text.lstrip("-")
    return "$-$" + text[1:] if text.startswith("-") else "+" + text


def _bracket(lo: str | None, hi: str | None) -> str | None:
    """'[lo, hi]' from two formatted bounds; none unless both are there."""
    return f"[{lo}, {hi}]" if lo and hi else None


def _signed_interval(lo, hi, digits: int) -> str | None:
    return _bracket(_signed(lo, digits), _signed(hi, digits))


# Tables that are not launch statistics, and what each says (keys start with the table's name).
DERIVED = {
    "fidelity": fidelity_numbers,
    "int8_sweep": sweep_numbers,
    "batch_operators": batch_operator_numbers,
    "torch_batch_operators": lambda table: batch_operator_numbers(table, "torch_batch_operators", "runtime"),
    "batch_threads": batch_thread_numbers,
    "language": language_numbers,
}


def paper_numbers(tables: dict[str, pd.DataFrame], headline_sets: dict[str, str]) -> dict[str, str]:
    """key -> LaTeX text for every metric, interval, speed-up and verdict of every study table
    (launch counts too, so the text can say how many): 'study/...' on its headline set,
    'study@set/...' on each other set, so a replication is quoted from its own cells."""
    numbers = host_numbers([t for study, t in tables.items() if study not in DERIVED])
    for study, table in tables.items():
        if study in DERIVED:
            numbers |= DERIVED[study](table)
            continue
        for _, row in table.iterrows():
            name = study if row["set"] == headline_sets[study] else f"{study}@{row['set']}"
            key = "/".join(_key_parts(row, name))
            values = {"launches": f"{row['launches_ok']}/{row['launches']}", "verdict": row.get("verdict")}
            for metric in STUDIES[study]["metrics"]:
                digits = DIGITS.get(metric, 2)
                values[metric] = _format(row.get(metric), digits)
                lo, hi = _format(row.get(f"{metric}_lo"), digits), _format(row.get(f"{metric}_hi"), digits)
                values[f"{metric}_ci"] = _bracket(lo, hi)
            values["speedup"] = _format(row.get("speedup"), 2)
            values["speedup_conservative"] = _format(row.get("speedup_conservative"), 2)
            # the speed-up's own 95% interval (bootstrap over launches), beside the CIs' verdict
            values["speedup_ci"] = _bracket(
                _format(row.get("speedup_boot_lo"), 2), _format(row.get("speedup_boot_hi"), 2)
            )
            # and paired by launch round (the rounds' ratios, drift between rounds cancelled)
            values["speedup_paired"] = _format(row.get("speedup_paired"), 2)
            values["speedup_paired_ci"] = _bracket(
                _format(row.get("speedup_paired_lo"), 2), _format(row.get("speedup_paired_hi"), 2)
            )
            numbers |= {
                f"{key}/{name}": text for name, text in values.items() if isinstance(text, str) and text
            }
    return numbers


QUOTE = re.compile(r"\\rmnum\{([^}]*)\}")


def text_files(root: str | Path) -> list[Path]:
    """The paper's own text under a checkout: main.tex and its sections, which quote the numbers."""
    root = Path(root)
    return [root / "paper/main.tex", *sorted((root / "paper/sections").glob("*.tex"))]


# Text that prints only in the extended tier: \ifrmextended ... \fi (never nested), and the
# sections main.tex inputs that way.
EXTENDED_TEXT = re.compile(r"\\ifrmextended.*?\\fi", re.DOTALL)
EXTENDED_SECTION = re.compile(r"\\ifrmextended\\input\{sections/(\w+)\}\\fi")


def quoted_keys(texts: list[str]) -> set[str]:
    """The keys the paper's text quotes with \\rmnum{...}."""
    return {key for text in texts for key in QUOTE.findall(text)}


def printed_text(files: list[Path], tier: str) -> list[str]:
    """The paper's text as a run of this tier prints it: in the paper tier, without what only the
    extended tier prints."""
    texts = {Path(f).stem: Path(f).read_text() for f in files}
    if tier == "extended":
        return list(texts.values())
    extended = set(EXTENDED_SECTION.findall(texts.get("main", "")))
    return [EXTENDED_TEXT.sub("", text) for name, text in texts.items() if name not in extended]


def unmeasured_report(quoted: set[str], numbers: dict[str, str]) -> str:
    """Which quoted numbers this run has no value for (they print as a bold "??"), sorted so a
    study's stay together: expected in a run that leaves cells out (smoke, no GPU), a typo in the
    text or a lost cell if not."""
    missing = sorted(quoted - numbers.keys())
    if not missing:
        return f"every one of the {len(quoted)} numbers the text quotes was measured"
    lines = [
        f"{len(missing)} of the {len(quoted)} numbers the text quotes have no value in this run (printed as ??):"
    ]
    lines += [f"  {key}" for key in missing]
    return "\n".join(lines)


def numbers_tex(numbers: dict[str, str], tier: str = "paper") -> str:
    """The definitions, and \\ifrmextended: true where the run's config is the extended tier, so
    the text includes the sections of the studies past the paper only where they were measured."""
    lines = [PREAMBLE, r"\newif\ifrmextended", r"\rmextendedtrue" if tier == "extended" else ""]
    lines += [rf"\rmset{{{key}}}{{{text}}}" for key, text in sorted(numbers.items())]
    return "\n".join(lines) + "\n"
