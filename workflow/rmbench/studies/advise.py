"""Advice for one reward model on this host: the runtime that scores it fastest, the batching that
pays, whether the faster path keeps the scores, and the command that serves it to a trainer.

    rmbench-advise FOLDER [--rows JSONL] [--budget-min 20] [--runtimes native,ort_python,...]

Every launch is a fresh process, as in the studies (rmbench.studies.launch). The runtimes run in
rounds of one launch each, until the fastest is told apart from the runner-up (95% intervals of
the launches' p50 apart), or the cap or the time budget is reached. A runtime that cannot score
the model, or fails, is a row with its reason. Everything lands in results/advise/<name>/: the
export, the reference scores, each launch's record, advice.json and advice.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rmbench.errors import DataSourceError, ModelSourceError, RmbenchError
from rmbench.export.precision import preference_fidelity
from rmbench.models.build import count_tokens, load_tokenizer
from rmbench.models.data import load_set
from rmbench.models.families import family_of_folder
from rmbench.plan.cells import parse_params
from rmbench.plan.glue import read_json, write_json
from rmbench.plan.inputs import NATIVE_BINARY
from rmbench.plan.profiles import profile_config
from rmbench.probes.provenance import host_label
from rmbench.runtimes import RUNTIMES, runtime_class
from rmbench.stats.across_launches import latency_verdict, t_interval

ROOT = Path(__file__).resolve().parents[3]  # the repository: its config's defaults, its git commit
EMBEDDED_ROWS = "results/data/main60.jsonl"  # the pipeline's headline set (rule sample_set)
SERVICE_PORT = 5000  # the advised service's; docs/runtimes.md serves other machines with a key
# The batching policies tried on the fastest runtime (rmbench.runtimes.batching), the first alone.
BATCHINGS = (
    {"batching": "none", "batch": 1},
    {"batching": "naive", "batch": 8},
    {"batching": "length_aware", "batch": 8},
    {"batching": "token_budget", "batch": 8, "token_budget": 4096},
)


def timed_rows(rows: list[dict]) -> list[dict]:
    """Each row's reply, and its rejected reply as a row of its own where the row has one: both
    are timed, and their scores say whether a runtime keeps the model's preference."""
    out = []
    for row in rows:
        out.append({"id": row["id"], "prompt": row["prompt"], "response": row["response"]})
        if isinstance(row.get("rejected"), str):
            out.append({"id": f"{row['id']}~rejected", "prompt": row["prompt"], "response": row["rejected"]})
    return out


def preference_agreement(rows: list[dict], scores: list[float], reference: list[float]) -> float | None:
    """The share of chosen/rejected pairs ranked as the PyTorch reference ranks them (the fidelity
    gate's measure, rmbench.export.precision.preference_fidelity); None without pairs."""
    index = {row["id"]: i for i, row in enumerate(rows)}
    pairs = [
        (index[r["id"][: -len("~rejected")]], i) for i, r in enumerate(rows) if r["id"].endswith("~rejected")
    ]
    if not pairs:
        return None
    chosen, rejected = zip(*pairs)
    pick = lambda values, at: [values[i] for i in at]
    found = preference_fidelity(
        pick(scores, chosen), pick(scores, rejected), pick(reference, chosen), pick(reference, rejected)
    )
    return found["preference_agreement"]


def runtime_options(name: str, binary: Path) -> dict:
    return {"binary": str(binary)} if runtime_class(name).native_engine_needed({}) else {}


def refusal(name: str, family: dict, binary: Path) -> str | None:
    """Why `name` cannot score this model on this machine's CPU, or None when it can."""
    cls = runtime_class(name)
    if "latency" not in cls.studies:
        return f"{name} joins no latency study"
    options = runtime_options(name, binary)
    reason = cls.family_reason(family, options) or cls.unavailable_reason("cpu", options)
    if reason is None and options and not binary.exists():
        reason = f"the native engine is not built ({binary}): run `snakemake --cores 1 {NATIVE_BINARY}`"
    return reason


def launch_in_fresh_process(spec: dict, folder: Path) -> dict:
    """One launch in a new Python process (python -m rmbench.studies.launch SPEC), which imports
    what the launch needs and none of the statistics this module does."""
    cell = spec["cell"]
    threads = spec["settings"]["threads"]
    path = (
        folder
        / "launches"
        / f"{cell['runtime']}+{cell['params']}+threads~{threads}+launch~{cell['launch']}.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(spec, path.with_suffix(".spec.json"))
    done = subprocess.run(
        [sys.executable, "-m", "rmbench.studies.launch", str(path.with_suffix(".spec.json"))],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not path.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {
            "cell": cell,
            "status": "failed",
            "reason": " | ".join(tail)[-500:] or f"exit {done.returncode}",
        }
    return read_json(path)


def interval_of(records: list[dict], metric: str):
    return t_interval([r["metrics"][metric] for r in records])


def standings(records: dict[str, list[dict]], metric: str, lower_is_better: bool = True) -> list[str]:
    """The runtimes with ok launches, best first by the mean of `metric` over launches."""
    means = {name: np.mean([r["metrics"][metric] for r in rs]) for name, rs in records.items() if rs}
    return sorted(means, key=lambda name: means[name] if lower_is_better else -means[name])


def settled(records: dict[str, list[dict]]) -> bool:
    """Whether the fastest runtime's p50 interval lies apart from the runner-up's."""
    order = standings(records, "p50_ms")
    if len(order) < 2:
        return bool(order)
    first, second = (interval_of(records[name], "p50_ms") for name in order[:2])
    return latency_verdict(first, second) == "faster"


class Budget:
    """The time budget, said up front; each launch prints its progress and the time left, on the
    terminal and in `log` where given."""

    def __init__(self, seconds: float, log=None):
        self.seconds, self.started, self.launches, self.log = seconds, time.monotonic(), 0, log

    def say(self, text: str) -> None:
        for out in (sys.stdout, self.log):
            if out is not None:
                print(f"advise: {text}", file=out, flush=True)

    def spent(self) -> float:
        return time.monotonic() - self.started

    def allows(self, launches: int) -> bool:
        """Whether `launches` more fit, at the mean launch time so far."""
        if not self.launches:
            return True
        return self.spent() + launches * self.spent() / self.launches <= self.seconds

    def said(self, what: str) -> None:
        """One launch done: what it was, the time spent and the budget left."""
        self.launches += 1
        left = max(self.seconds - self.spent(), 0)
        self.say(f"{what} ({self.spent():.0f} s spent, at most {left:.0f} s left)")


def run_rounds(
    names, make_spec, folder, budget, launches: int, cap: int, stop, reserve: int = 0
) -> tuple[dict, dict]:
    """Rounds of one launch per runtime (in a seeded shuffled order) until `stop(ok)` after the
    first `launches` rounds, `cap` rounds, or the budget, keeping `reserve` launches' time for the
    steps after. Returns the ok records and the failures."""
    ok, failed = {name: [] for name in names}, {}
    order = random.Random(20261207)
    for round_ in range(1, cap + 1):
        live = [name for name in names if name not in failed]
        over = not budget.allows(len(live) + reserve)
        if not live or (round_ > launches and stop(ok)) or (over and round_ > 2):
            break
        if over:  # rounds 1 and 2 run whatever the budget: two launches are the fewest an interval needs
            budget.say(f"round {round_} runs past the time budget: an interval needs two launches each")
        order.shuffle(live)
        for name in live:
            record = launch_in_fresh_process(make_spec(name, round_), folder)
            if record.get("status") != "ok":
                failed[name] = f"{record.get('status')}: {record.get('reason')}"
            else:
                ok[name].append(record)
            budget.said(f"round {round_} of at most {cap}, {name}: {record.get('status')}")
    return {name: rs for name, rs in ok.items() if rs and name not in failed}, failed


def prepare(
    folder: Path, model: Path, rows: list[dict], scored: list[float], config: dict, names: list[str]
) -> tuple:
    """The reference scores (PyTorch fp32, one row at a time; the first rows' are `scored` already)
    and, where a runtime needs one, the ONNX export behind its parity gate. Returns (onnx path or
    None, why the export failed or None)."""
    from rmbench.export.onnx import export_onnx, parity_failure, parity_report, reference_scores

    threads = len(os.sched_getaffinity(0))
    rest = rows[len(scored) :]
    scores = scored[: len(rows)] + (reference_scores(model, rest, threads) if rest else [])
    write_json({"ids": [r["id"] for r in rows], "scores": scores}, folder / "reference.json")
    if not any(runtime_class(n).onnx_needed(runtime_options(n, Path())) for n in names):
        return None, None
    onnx = folder / "onnx" / "model.onnx"
    parity = config["parity"]
    try:
        if not onnx.exists():
            export_onnx(model, onnx, parity["opset"])
        report = parity_report(
            model,
            onnx,
            rows,
            scores,
            parity["tolerance"],
            parity["batch_size"],
            threads,
            parity["min_score_std"],
        )
    except Exception as e:  # noqa: BLE001 (any failure of the exporter is a row of the advice, not a crash)
        return None, f"the ONNX export failed: {type(e).__name__}: {e}"[:500]
    write_json(report, folder / "onnx" / "parity.json")
    failure = parity_failure(report)
    return (None, f"the ONNX export failed its parity gate: {failure}") if failure else (onnx, None)


def serve_command(model: Path, runtime: str, onnx, binary: Path, threads: int, batching: dict | None) -> str:
    """The rmbench-serve line that serves the model as advised (docs/runtimes.md, the service)."""
    parts = ["rmbench-serve", "--runtime", runtime, "--model-dir", str(model), "--threads", str(threads)]
    if onnx and runtime_class(runtime).onnx_needed({}):
        parts += ["--onnx", str(onnx)]
    if runtime_class(runtime).native_engine_needed({}):
        parts += ["--binary", str(binary)]
    if batching and batching["batching"] != "none":
        parts += ["--microbatch", batching["batching"], "--max-batch", str(batching["batch"])]
        if "token_budget" in batching:
            parts += ["--token-budget", str(batching["token_budget"])]
    else:
        parts += ["--microbatch", "off"]
    return " ".join(parts + ["--host", "127.0.0.1", "--port", str(SERVICE_PORT)])


def summary_row(name: str, records: list[dict], rows: list[dict], reference: list[float]) -> dict:
    p50, p95 = interval_of(records, "p50_ms"), interval_of(records, "p95_ms")
    scores = records[-1]["metrics"]["scores"]
    return {
        "runtime": name,
        "status": "ok",
        "launches": len(records),
        "p50_ms": p50.mean,
        "p50_ms_ci": [p50.lo, p50.hi],
        "p95_ms": p95.mean,
        "p95_ms_ci": [p95.lo, p95.hi],
        "max_abs_score_diff": max(r["metrics"]["max_abs_err"] for r in records),
        "preference_agreement": preference_agreement(rows, scores, reference),
    }


# Launches of the steps after the runtimes' rounds: the fastest at each smaller thread count,
# then each batching policy twice. The rounds leave their time in the budget.
THREAD_LAUNCHES = 3
BATCHING_LAUNCHES = 2
BUDGET_SPENT = "not compared: its launches would not fit in the time budget left (--budget-min)"

# Sizing the rows to the budget, before any launch: the first replies' reference pass sets the
# pace of a token, and each launch also pays a fixed start (process, imports, model load).
# LAUNCH_START_S lies between a toy model's loads (0.1-15 s by runtime in the smoke run) and a
# full-size one's start (about 18 s for Qwen3-0.6B, 30 s for Llama-3.2-1B, with torch.compile's
# compiles on top): run log 2026-12-08. The budget's own accounting corrects it after round 1.
PACE_REPLIES = 4
LAUNCH_START_S = 15.0
PARITY_PASSES = 2  # the parity gate scores every reply alone, then in batches
# Rounds 1 and 2 and the reference and parity passes may take this share of the budget; the rest
# is left for the export, more rounds, the threads and the batching (each said where left out).
ROUNDS_SHARE = 0.6
MIN_ROWS = 4


def comparison_seconds(tokens: list[int], pace_s: float, runtimes: int, warmup_rows: int) -> float:
    """The estimated time of the reference and parity passes and two rounds of every runtime over
    replies of these token counts, at `pace_s` a token."""
    timed, warm = sum(tokens), sum(tokens[:warmup_rows])
    passes = (1 + PARITY_PASSES) * timed + 2 * runtimes * (timed + warm)
    return passes * pace_s + 2 * runtimes * LAUNCH_START_S


def replies_within_budget(
    tokens: list[int],
    row_ends: list[int],
    pace_s: float,
    runtimes: int,
    warmup_rows: int,
    seconds_left: float,
) -> int:
    """How many of the replies (of these token counts) to keep: whole rows only (`row_ends`, each
    row's end among the replies), the most whose comparison_seconds fit in ROUNDS_SHARE of the
    seconds left, and at least MIN_ROWS rows (or all there are)."""
    fits = [
        end
        for end in row_ends
        if comparison_seconds(tokens[:end], pace_s, runtimes, warmup_rows) <= ROUNDS_SHARE * seconds_left
    ]
    return max([row_ends[min(MIN_ROWS, len(row_ends)) - 1], *fits])


def thread_counts(threads: int) -> list[int]:
    """The thread counts advise compares: 1, doubling while below every usable core, then all of
    them (1, 2, 4, 8, 12 on 12 cores)."""
    counts = [1]
    while counts[-1] * 2 < threads:
        counts.append(counts[-1] * 2)
    return counts + [threads] if threads > 1 else counts


def advised_threads(p50: dict) -> tuple[int, list[str]]:
    """The fewest threads past which more do not pay: up the ladder of `p50` (thread count -> the
    interval of its per-row p50 over launches), a count replaces the one advised so far only where
    its interval lies below that one's. Returns the count and a sentence per step."""
    counts = sorted(p50)
    best, steps = counts[0], []
    for count in counts[1:]:
        verdict = latency_verdict(p50[count], p50[best])
        if verdict in ("faster", "slower"):
            steps.append(f"{count} threads are {verdict} than {best}")
        else:
            steps.append(f"{count} threads and {best} are not told apart")
        if verdict == "faster":
            best = count
    return best, steps


def compare_threads(best: str, ok: dict, spec, folder: Path, budget: Budget, threads: int) -> dict | None:
    """The fastest runtime at each smaller count of thread_counts against all usable cores (its
    launches so far). More threads pay only where their p50 interval lies below fewer threads'.
    Otherwise the fewer are advised, leaving the other cores to the trainer. Counts the budget
    does not reach are left out, from the top, and said."""
    if threads < 2:
        return {"compared": [threads], "best": threads, "reason": "this process may use one core only"}
    ladder = thread_counts(threads)[:-1]
    fewer = list(ladder)
    while fewer and not budget.allows(THREAD_LAUNCHES * len(fewer)):
        fewer.pop()
    if not fewer:
        return {"compared": [threads], "best": threads, "reason": BUDGET_SPENT}
    p50 = {threads: interval_of(ok[best], "p50_ms")}
    for count in fewer:
        launched, failed = run_rounds(
            [best],
            lambda name, i, count=count: spec(name, "latency", "set~user", i, count),
            folder,
            budget,
            THREAD_LAUNCHES,
            THREAD_LAUNCHES,
            lambda _: True,
        )
        if failed or not launched:
            return {"compared": [count, threads], "best": threads, "reason": "; ".join(failed.values())}
        p50[count] = interval_of(launched[best], "p50_ms")
    advised, steps = advised_threads(p50)
    left_out = ladder[len(fewer) :]
    if left_out:
        steps.append(f"{', '.join(map(str, left_out))} threads {BUDGET_SPENT}")
    return {
        "compared": sorted(p50),
        "p50_ms": {str(n): p50[n].mean for n in sorted(p50)},
        "verdict": "; ".join(steps),
        "best": advised,
    }


def resolve_model(name: str) -> Path:
    """A model folder as given, or the hub model `name` downloaded into the hub's cache (the same
    loading as the pipeline's `source: hub`; offline, a clear error)."""
    if Path(name).is_dir():
        return Path(name)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name))
    except Exception as e:  # offline, a bad id, a gated repo: one message, re-raised
        raise ModelSourceError(
            f"{name} is neither a model folder nor a hub model this machine can download "
            f"({type(e).__name__}: {e}); download it elsewhere and pass its folder"
        ) from e


def fitted_rows(
    model: Path, rows: list[dict], names: list[str], warmup_rows: int, budget: Budget, threads: int
) -> tuple[list[dict], list[float], dict | None]:
    """The most of the timed replies `rows` (count_tokens' lengths on them) that fit the budget
    (replies_within_budget), at the pace of a token in the first PACE_REPLIES replies on PyTorch.
    Returns them, those first replies' reference scores and, where rows were left out, what was
    cut, why, and the budget that would hold them all."""
    from rmbench.export.onnx import reference_scores

    tokens = [row[f"tokens_{model.name}"] for row in rows]
    row_ends = [
        i + 1 for i in range(len(rows)) if i + 1 == len(rows) or not rows[i + 1]["id"].endswith("~rejected")
    ]
    seconds: list[float] = []
    scored = reference_scores(model, rows[:PACE_REPLIES], threads, seconds)
    pace = sum(seconds) / sum(tokens[: len(seconds)])
    keep = replies_within_budget(
        tokens, row_ends, pace, len(names), warmup_rows, budget.seconds - budget.spent()
    )
    if keep == len(rows):
        return rows, scored, None
    kept_rows = row_ends.index(keep) + 1
    needed = comparison_seconds(tokens, pace, len(names), warmup_rows) / ROUNDS_SHARE + budget.spent()
    cut = {
        "rows": kept_rows,
        "of": len(row_ends),
        "ms_per_token": round(1000 * pace, 2),
        "budget_min_for_all": math.ceil(needed / 60),
        "reason": (
            f"at {1000 * pace:.1f} ms a token on PyTorch, two rounds of {len(names)} runtimes over "
            f"all {len(row_ends)} rows would not fit in the budget"
        ),
    }
    budget.say(
        f"{kept_rows} of {len(row_ends)} rows ({keep} replies) fit the budget at {1000 * pace:.1f} ms a "
        f"token; all of them would need about {cut['budget_min_for_all']} min (--budget-min)"
    )
    return rows[:keep], scored, cut


def advise(
    model: Path,
    rows_path: Path,
    folder: Path,
    budget_s: float,
    names: list[str] | None,
    binary: Path,
    launches: int = 3,
    cap: int = 8,
    max_rows: int = 30,
    log=None,
) -> dict:
    """Runs the comparison and writes advice.json and advice.md into `folder`. `launches` rounds
    at least, `cap` at most; progress also to the file `log`."""
    family = family_of_folder(model)  # an unknown architecture is refused, naming the known ones
    config = profile_config(ROOT)
    rows = timed_rows(load_set(rows_path)[:max_rows])
    if not rows:
        raise DataSourceError(f"{rows_path} holds no rows: advise needs at least one to time")
    folder.mkdir(parents=True, exist_ok=True)
    names = names or [n for n in RUNTIMES if "latency" in runtime_class(n).studies]
    refused = {n: reason for n in names if (reason := refusal(n, family, binary))}
    names = [n for n in names if n not in refused]
    threads = len(os.sched_getaffinity(0))
    budget = Budget(budget_s, log)
    budget.say(
        f"{model} ({family['name']}), {len(rows)} timed replies on {threads} CPU threads: "
        f"{', '.join(names) or 'no runtime'}, {launches} to {cap} launches each, then batching; "
        f"budget {budget_s / 60:.0f} min"
    )
    count_tokens(rows, {model.name: load_tokenizer(model)})  # sizing, batch planning and FLOPs read them
    rows, scored, cut = fitted_rows(model, rows, names, config["launch"]["warmup_rows"], budget, threads)
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    onnx, export_failure = prepare(folder, model, rows, scored, config, names)
    if export_failure:
        refused |= {n: export_failure for n in names if runtime_class(n).onnx_needed({})}
        names = [n for n in names if n not in refused]
    settings = {
        "threads": threads,
        "warmup_rows": config["launch"]["warmup_rows"],
        "timeout_s": config["launch"]["timeout_s"],
        "max_length": config["data"]["max_length"],
        "tolerance": config["parity"]["tolerance"],
        "repeat": 1,
    }

    def spec(name: str, study: str, params: str, launch: int, threads_: int = threads) -> dict:
        cell = {"study": study, "model": model.name, "device": "cpu", "runtime": name, "params": params}
        return {
            "cell": cell | {"launch": launch},
            "rows": str(folder / "rows.jsonl"),
            "reference": str(folder / "reference.json"),
            "model": str(model),
            "repo": str(ROOT),
            "onnx": str(onnx) if onnx and runtime_class(name).onnx_needed({}) else None,
            "settings": settings | {"threads": threads_},
            "options": runtime_options(name, binary)
            | parse_params(params)
            | {"cache_root": str(folder / "inductor-cache")},
        }

    reference = read_json(folder / "reference.json")["scores"]
    batches = any("batching" in runtime_class(n).studies for n in names)
    reserve = THREAD_LAUNCHES * (len(thread_counts(threads)) - 1) + (
        BATCHING_LAUNCHES * len(BATCHINGS) if batches else 0
    )
    ok, failed = run_rounds(
        names, lambda n, i: spec(n, "latency", "set~user", i), folder, budget, launches, cap, settled, reserve
    )
    refused |= failed
    order = standings(ok, "p50_ms")
    table = [summary_row(name, ok[name], rows, reference) for name in order]
    table += [{"runtime": name, "status": "refused", "reason": reason} for name, reason in refused.items()]
    advice = {
        "model": str(model),
        "family": family["name"],
        "rows": len(rows),
        "rows_cut": cut,
        "cpu_threads": threads,
        "budget_s": budget_s,
        "runtimes": table,
        "fastest": order[0] if order else None,
        "runner_up": order[1] if len(order) > 1 else None,
        "lead_settled": settled(ok) if len(order) > 1 else None,
    }
    best = order[0] if order else None
    advice["threads"] = compare_threads(best, ok, spec, folder, budget, threads) if best else None
    serve_threads = advice["threads"]["best"] if advice["threads"] else threads
    batching_rows, best_batching, advice["batching_reason"] = [], None, None
    if best and "batching" not in runtime_class(best).studies:
        advice["batching_reason"] = f"not compared: {best} has no batching policies"
    elif best and not budget.allows(BATCHING_LAUNCHES * len(BATCHINGS)):
        advice["batching_reason"] = BUDGET_SPENT
    elif best:
        variants = {"+".join(f"{k}~{v}" for k, v in b.items()): b for b in BATCHINGS}
        ok_b, failed_b = run_rounds(
            list(variants),
            lambda v, i: spec(best, "batching", f"set~user+{v}", i, serve_threads),
            folder,
            budget,
            BATCHING_LAUNCHES,
            BATCHING_LAUNCHES,
            lambda _: True,
        )
        batching_rows = [
            {
                "batching": variants[v],
                "rows_per_s": float(np.mean([r["metrics"]["throughput_rps"] for r in rs])),
                "launches": len(rs),
            }
            for v, rs in ok_b.items()
        ] + [{"batching": variants[v], "status": "failed", "reason": why} for v, why in failed_b.items()]
        timed = [r for r in batching_rows if "rows_per_s" in r]
        best_batching = max(timed, key=lambda r: r["rows_per_s"])["batching"] if timed else None
    advice["batching"] = batching_rows
    advice["best_batching"] = best_batching
    if best:
        advice["serve"] = serve_command(model, best, onnx, binary, serve_threads, best_batching)
        advice["trainer_url"] = f"http://127.0.0.1:{SERVICE_PORT}/get_reward"
    host = next((r for rs in ok.values() for r in rs), {}).get("provenance", {})
    advice["host"] = host_label(host)
    advice["spent_s"] = budget.spent()
    write_json(advice, folder / "advice.json")
    (folder / "advice.md").write_text(advice_markdown(advice))
    budget.say(f"wrote {folder / 'advice.md'} and advice.json")
    return advice


def _ms(value: float, ci: list[float]) -> str:
    lo, hi = ci
    return f"{value:.1f}" + ("" if math.isnan(lo) else f" [{lo:.1f}, {hi:.1f}]")


def advice_markdown(advice: dict) -> str:
    """advice.json in words, for a person."""
    lines = [
        f"# Advice for {advice['model']}",
        "",
        f"Family {advice['family']}, {advice['rows']} timed replies, {advice['cpu_threads']} threads, "
        + f"on {advice['host'] or 'this host'}.",
        f"Spent {advice['spent_s'] / 60:.1f} of {advice['budget_s'] / 60:.0f} budgeted minutes.",
        "",
    ]
    if advice["rows_cut"]:
        cut = advice["rows_cut"]
        need = cut["budget_min_for_all"]
        lines += [
            f"Rows: the first {cut['rows']} of {cut['of']}: {cut['reason']}. "
            + f"All of them need about {need} minutes (--budget-min {need}).",
            "",
        ]
    if advice["fastest"]:
        lead = {
            True: "the lead is settled (95% intervals apart)",
            False: "the lead is not settled (intervals overlap)",
        }
        lines.append(f"**Fastest: {advice['fastest']}**.")
        if advice["runner_up"]:
            lines.append(f"Runner-up: {advice['runner_up']}; {lead[advice['lead_settled']]}.")
    else:
        lines.append("No runtime scored the model: see the reasons below.")
    lines += [
        "",
        "| runtime | launches | p50 ms/row [95% CI] | p95 ms/row [95% CI] | max abs score diff vs PyTorch | preference agreement |",
        "|---|---|---|---|---|---|",
    ]
    for row in advice["runtimes"]:
        if row["status"] != "ok":
            lines.append(f"| {row['runtime']} | - | {row['status']}: {row['reason']} | | | |")
            continue
        agreement = "" if row["preference_agreement"] is None else f"{100 * row['preference_agreement']:.0f}%"
        lines.append(
            f"| {row['runtime']} | {row['launches']} | {_ms(row['p50_ms'], row['p50_ms_ci'])} | "
            f"{_ms(row['p95_ms'], row['p95_ms_ci'])} | {row['max_abs_score_diff']:.2g} | {agreement} |"
        )
    t = advice.get("threads")
    if t and "p50_ms" in t:
        lines += [
            "",
            f"Threads: {t['verdict']} (p50 {', '.join(f'{n}: {ms:.1f} ms' for n, ms in t['p50_ms'].items())}); advised: {t['best']}.",
        ]
    elif t:
        lines += ["", f"Threads: {t['reason']}; advised: {t['best']}."]
    if advice.get("batching_reason"):
        lines += ["", f"Batching: {advice['batching_reason']}."]
    if advice["batching"]:
        lines += ["", f"Batching on {advice['fastest']}:", "", "| batching | rows/s |", "|---|---|"]
        for row in advice["batching"]:
            label = " ".join(f"{k}={v}" for k, v in row["batching"].items())
            lines.append(
                f"| {label} | {row['rows_per_s']:.1f} |"
                if "rows_per_s" in row
                else f"| {label} | failed: {row['reason']} |"
            )
    if advice.get("serve"):
        lines += ["", "Serve it so (on this machine; docs/runtimes.md serves others, with a key):", ""]
        lines += [
            "```bash",
            advice["serve"],
            "```",
            "",
            f"OpenRLHF: `--remote_rm_url {advice['trainer_url']}`.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, log=None) -> int:
    parser = argparse.ArgumentParser(prog="rmbench-advise", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "model", nargs="?", help="the reward model: its folder (config.json, tokenizer) or hub id"
    )
    parser.add_argument(
        "--rows", type=Path, default=ROOT / EMBEDDED_ROWS, help="JSONL rows: id, prompt, response[, rejected]"
    )
    parser.add_argument("--out", type=Path, help="default: results/advise/<the folder's name>")
    parser.add_argument("--budget-min", type=float, default=20.0, help="the whole comparison's time, at most")
    parser.add_argument(
        "--runtimes", help="comma-separated (default: every runtime that can score the family)"
    )
    parser.add_argument("--binary", type=Path, default=ROOT / NATIVE_BINARY, help="the native engine")
    parser.add_argument(
        "--max-rows", type=int, default=30, help="rows of --rows used (each with its rejected reply)"
    )
    parser.add_argument("--cap", type=int, default=8, help="launches per runtime at most (3 at least)")
    args = parser.parse_args(argv)
    if args.model is None:
        parser.error("name the reward model's folder")
    if not args.rows.exists():
        raise SystemExit(
            f"advise: {args.rows} is missing: pass --rows, or write the embedded rows with "
            f"`snakemake --cores 1 {EMBEDDED_ROWS}`"
        )
    names = args.runtimes.split(",") if args.runtimes else None
    unknown = sorted(set(names or []) - set(RUNTIMES))
    if unknown:
        raise SystemExit(f"advise: unknown runtimes {unknown}; known: {', '.join(RUNTIMES)}")
    try:
        model = resolve_model(args.model)
        out = args.out or ROOT / "results" / "advise" / model.resolve().name
        advise(
            model,
            args.rows,
            out,
            args.budget_min * 60,
            names,
            args.binary,
            cap=max(args.cap, 3),
            max_rows=args.max_rows,
            log=log,
        )
    except RmbenchError as e:
        raise SystemExit(f"advise: {e}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
