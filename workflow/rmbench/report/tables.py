"""Tidy tables from raw launch files, and the paper's LaTeX tables from tidy tables.

Statistics never read raw launch files: launch_table() builds the one tidy table they use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from rmbench.plan.cells import parse_params, step_name
from rmbench.plan.studies import LANGUAGE_PAIR, STUDIES
from rmbench.probes.provenance import host_cell, host_label
from rmbench.stats.across_launches import CONFIDENCE, intervals_wording, per_row_difference, per_row_median

CELL_KEYS = ["study", "model", "device", "runtime", "params", "launch"]

GROUP_KEYS = ["model", "device", "set", "variant", "runtime"]


def compared_metrics(study: str) -> list[str]:
    layout = STUDIES[study]
    return [m for m in layout["metrics"] if m not in layout.get("report_only", [])]


def group_keys(study: str) -> list[str]:
    """What a study's comparisons stay within (every key but the compared one, unless it says)."""
    layout = STUDIES[study]
    return layout.get("within") or [k for k in GROUP_KEYS if k != layout["between"]]


def cell_columns(study: str, runtime: str, params: dict) -> dict:
    """How the tables name a cell: its parameters, `variant` (all but the set, 'k~v+...', or '-'),
    `step` ('runtime k=v') and `runtime` (the step, where the study counts a runtime's variant as
    a runtime of its own)."""
    row = {"runtime": runtime} | params
    row["variant"] = "+".join(f"{k}~{v}" for k, v in params.items() if k != "set") or "-"
    row["step"] = step_name(runtime, params)
    if STUDIES[study].get("variant_in_runtime"):
        row["runtime"], row["variant"] = row["step"], "-"
    return row


def launch_row(record: dict) -> dict:
    """One launch as a flat row: cell keys, parameters, status, scalar metrics, provenance."""
    cell, metrics, prov = record["cell"], record.get("metrics", {}), record.get("provenance", {})
    row = {k: cell[k] for k in CELL_KEYS}
    row |= cell_columns(cell["study"], cell["runtime"], parse_params(cell["params"]))
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


def replication_keys(study: str) -> tuple[str, ...]:
    """What a study's comparisons are within, besides model and set."""
    return tuple(k for k in group_keys(study) if k not in ("model", "set"))


# What a study table says of each comparison's verdict (study_table).
DESIGN_COLUMNS = ["verdict", "verdict_look", "verdict_level", "verdict_alpha"]


def design_verdicts(sequential: pd.DataFrame, study: str) -> pd.DataFrame:
    """The sequential table's verdicts (sequential.decisions_table), each keyed as the study's
    comparisons name their cells: the group keys, `candidate` and `baseline`."""
    between, keys = STUDIES[study]["between"], group_keys(study)
    rows = []
    for r in sequential.itertuples():
        candidate, baseline = (
            cell_columns(study, runtime, parse_params(params))
            for runtime, params in (key.split("/", 1) for key in (r.candidate, r.baseline))
        )
        named = candidate | {"model": r.model, "device": r.device}
        rows.append(
            {k: named[k] for k in keys}
            | {"candidate": candidate[between], "baseline": baseline[between], "verdict": r.verdict}
            | {"verdict_look": f"{r.verdict_look} of {r.looks}", "verdict_level": r.verdict_level}
            | {"verdict_alpha": r.alpha}
        )
    return pd.DataFrame(rows, columns=[*keys, "candidate", "baseline", *DESIGN_COLUMNS])


def study_table(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    study: str,
    baseline: str,
    headline_set: str | None = None,
    sequential: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per cell: launches, each metric with its CI, and the first metric's speed-up,
    Welch p and verdict against the baseline; on the headline set, whether that verdict was
    reproduced on the other sets and the other model (`reproduced`, `disagreeing`).

    `verdict` is the design's. In a sequential block (`sequential`: its decisions_table) it is
    what the looks decided (faster, slower, tied or undecided), with the look (`verdict_look`) and
    its level. Elsewhere the launches were fixed in advance, and it is the 95% intervals' overlap
    rule. That rule at the last look is `paper_verdict` everywhere: the paper's, with no stated
    error rate once looks may stop early."""
    layout = STUDIES[study]
    between, first = layout["between"], layout["metrics"][0]
    keys = group_keys(study)
    vs = comparisons[(comparisons["baseline"] == baseline) & (comparisons["metric"] == first)]
    vs = vs.set_index([*keys, "candidate"])
    design = design_verdicts(sequential, study) if sequential is not None and len(sequential) else None
    if design is not None:
        design = design[design["baseline"] == baseline].set_index([*keys, "candidate"])
    rows = []
    for _, s in summary.iterrows():
        row = {k: s[k] for k in [*keys, between, "launches_ok", "launches"]}
        for m in layout["metrics"]:
            row |= {m: s[m], f"{m}_lo": s[f"{m}_lo"], f"{m}_hi": s[f"{m}_hi"], f"{m}_cv": s[f"{m}_cv"]}
        row["launches_needed"] = s.get(f"{first}_launches_needed", math.nan)
        row["rows_cut"] = s.get("rows_cut", math.nan)  # rows past the model's limit (models.row_limit)
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
                "speedup_paired": c.get("speedup_paired", math.nan),
                "speedup_paired_lo": c.get("speedup_paired_lo", math.nan),
                "speedup_paired_hi": c.get("speedup_paired_hi", math.nan),
                "welch_p": c["welch_p"],
                "verdict": c["verdict"],
                "verdict_look": "",  # launches fixed in advance: one test, at 95%
                "verdict_level": 1 - CONFIDENCE,
                "verdict_alpha": 1 - CONFIDENCE,
                "paper_verdict": c["verdict"],
            }
            if design is not None and key in design.index:
                row |= design.loc[key, DESIGN_COLUMNS].to_dict()
            if across_hosts(c):
                row["warning"] = "; ".join(w for w in (row["warning"], "compared across hosts") if w)
        rows.append(row)
    table = pd.DataFrame(rows)
    if headline_set is None or comparisons.empty:
        return table
    from rmbench.stats.replication import replication_table

    checked = replication_table(comparisons, headline_set, replication_keys(study))
    if checked.empty:
        return table
    checked = checked[(checked["metric"] == first) & (checked["baseline"] == baseline)]
    checked = checked.rename(columns={"candidate": between, "headline_set": "set"})
    on = ["model", *replication_keys(study), "set", between]
    flags = checked[[*on, "reproduced", "disagreeing"]]
    return table.merge(flags, on=on, how="left")


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


def across_hosts(row) -> bool:
    """Whether a comparison row pairs launches from different kinds of host (a bool column, or
    its text read back from CSV)."""
    return row.get("across_hosts") in (True, "True")


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
    0.15], paired by round 0.13x [0.12, 0.14], CIs apart': the speed-up (ratio of means), its own
    95% interval (bootstrap over launches), the same paired by launch round where there are (the
    rounds' geometric mean and its interval), and whether the two cells' intervals overlap (the
    study's verdict)."""
    rows = comparisons[(comparisons["baseline"] == baseline) & (comparisons["metric"] == metric)].copy()
    rows["statement"] = [
        f"{variant_label(r.candidate)} vs {variant_label(baseline)}: {r.speedup:.2f}x"
        + _interval_text(r.speedup_boot_lo, r.speedup_boot_hi)
        + paired_text(r.speedup_paired, r.speedup_paired_lo, r.speedup_paired_hi, ", ")
        + f", {intervals_wording(r.verdict)}"
        for r in rows.itertuples()
    ]
    keep = [k for k in ("model", "device", "set", "runtime") if k in rows]
    columns = ["candidate", "baseline", "speedup", "speedup_boot_lo", "speedup_boot_hi"]
    columns += ["speedup_paired", "speedup_paired_lo", "speedup_paired_hi"]
    return rows[[*keep, *columns, "speedup_conservative", "verdict", "statement"]]


def comparison_standing(row, design=None) -> str:
    """What one comparison shows. Where its block ran in looks (`design`: its design_verdicts
    row), what the looks decided, and at which look. Else a difference (CIs apart), a tie (the
    interval paired by round inside the equivalence margin) or neither, where the launches did
    not tell."""
    if design is not None:
        verdict = "undecided at the cap" if design["verdict"] == "undecided" else design["verdict"]
        return f"{verdict} (look {design['verdict_look']})"
    wording = intervals_wording(row["verdict"])
    if row["verdict"] in ("faster", "slower"):
        return f"{row['verdict']} ({wording})"
    if row["paired_equivalence"] == "equivalent":
        return "tied (equivalence shown)"
    return f"not distinguishable ({wording}, no tie shown)"


def best_runtime_table(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    baseline: str,
    headline_set: str,
    metric: str = "p50_ms",
    sequential: pd.DataFrame | None = None,
    probed: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The best CPU runtime per model (and variant) on the headline set: the lowest mean of
    `metric` over launches, its speed-up over the baseline and over the runner-up, each with the
    interval paired by launch round and what the comparison shows (comparison_standing: the
    looks' verdict where `sequential`, the study's decisions_table, has the comparison). With
    `probed` (roofline.in_launch_fractions of the headline set's CPU launches by model and
    runtime), also the best runtime's share of the GEMM ceiling probed in its own launches."""
    shares = probed.set_index(["model", "runtime"]) if probed is not None else None
    design = design_verdicts(sequential, "latency") if sequential is not None else None
    decided = {}  # each decided pair both ways round: the runner-up may be the look's baseline
    flipped = {"faster": "slower", "slower": "faster"}
    for r in design.to_dict("records") if design is not None else []:
        decided[(r["model"], r["set"], r["variant"], r["candidate"], r["baseline"])] = r
        reverse = r | {"verdict": flipped.get(r["verdict"], r["verdict"])}
        decided.setdefault((r["model"], r["set"], r["variant"], r["baseline"], r["candidate"]), reverse)

    def headline_cpu(frame: pd.DataFrame) -> pd.Series:
        return (frame["device"] == "cpu") & (frame["set"] == headline_set)

    cells = summary[headline_cpu(summary) & (summary["launches_ok"] >= 2)]
    pairs = comparisons[headline_cpu(comparisons) & (comparisons["metric"] == metric)]
    pairs = pairs.set_index(["model", "variant", "candidate", "baseline"]).sort_index()
    rows = []
    for (model, variant), group in cells.groupby(["model", "variant"], sort=True):
        ranked = group.sort_values(metric)["runtime"].tolist()
        if len(ranked) < 2:
            continue
        best, runner_up = ranked[:2]
        row = {"model": model, "variant": variant, "metric": metric, "best": best, "runner_up": runner_up}
        for side, other in (("baseline", baseline), ("runner_up", runner_up)):
            key = (model, variant, best, other)
            if key not in pairs.index:  # the best is the baseline itself
                continue
            c = pairs.loc[key]
            row |= {
                f"over_{side}": c["speedup"],
                f"over_{side}_paired": c["speedup_paired"],
                f"over_{side}_paired_lo": c["speedup_paired_lo"],
                f"over_{side}_paired_hi": c["speedup_paired_hi"],
                f"over_{side}_shows": comparison_standing(
                    c, decided.get((model, headline_set, variant, best, other))
                ),
            }
        row["n_best"] = int(group.loc[group["runtime"] == best, "launches_ok"].iloc[0])
        if shares is not None and (model, best) in shares.index:
            share = shares.loc[(model, best)]
            row |= {
                "of_ceiling": share["fraction_in_launch"],
                "of_ceiling_lo": share["fraction_in_launch_lo"],
                "of_ceiling_hi": share["fraction_in_launch_hi"],
                "probed_ceiling_gflops": share["probed_ceiling_gflops"],
            }
        row["host"] = group["host"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)


def paired_text(point: float, lo: float, hi: float, lead: str = "") -> str:
    """'paired by round 1.40x [1.34, 1.45]': the rounds' geometric mean speed-up and its interval
    (after `lead`), so a reader sees the point the interval is about; nothing without pairs."""
    if math.isnan(lo) or math.isnan(hi):
        return ""
    return f"{lead}paired by round {point:.2f}x [{lo:.2f}, {hi:.2f}]"


def _interval_text(lo: float, hi: float) -> str:
    """' [1.04, 1.14]'; nothing without an interval."""
    if math.isnan(lo) or math.isnan(hi):
        return ""
    return f" [{lo:.2f}, {hi:.2f}]"


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


# Each service against the engines it should at least match (Runtime.compared_with), at the same
# number of clients. Variant keys that set the server up rather than its clients (a max_batch~1
# server at c=8 is compared with the engines at c=8).
SERVER_SETTINGS = ("max_batch", "adaptive")


def service_verdicts(
    launches: pd.DataFrame, metric: str, checks, baselines: dict[str, tuple[str, ...]]
) -> pd.DataFrame:
    """Each service (with each of its settings) against a shared in-process engine at the same
    concurrency, e.g. 'batching_server adaptive=on vs ort_python at shared c=8: 1.02x, CIs overlap'.
    `baselines`: each service and the engines it is compared with (rmbench.runtimes.service_baselines)."""
    from rmbench.stats.across_launches import compare_latency

    shared = launches[launches["variant"].str.startswith("mode~shared+")].copy()
    is_setting = lambda part: part.split("~")[0] in SERVER_SETTINGS
    parts = shared["variant"].str.split("+")
    shared["variant"] = parts.map(lambda ps: "+".join(p for p in ps if not is_setting(p)))
    settings = parts.map(lambda ps: " ".join(p.replace("~", "=") for p in ps if is_setting(p)))
    shared["who"] = (shared["runtime"] + " " + settings).str.strip()
    keys = ["model", "device", "set", "variant"]
    found = []
    for service, engines in baselines.items():
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
    rows["statement"] = [
        f"{c} vs {b} at {variant_label(v)}: {s:.2f}x, {intervals_wording(verdict)}"
        for c, b, v, s, verdict in zip(
            rows["candidate"], rows["baseline"], rows["variant"], rows["speedup"], rows["verdict"]
        )
    ]
    return rows[[*keys, "candidate", "baseline", "speedup", "speedup_conservative", "verdict", "statement"]]
