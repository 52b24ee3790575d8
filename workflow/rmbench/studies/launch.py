"""One launch of one cell: load, warm up, time, check correctness, and record the result.

A launch knows how to time and check; it does not know which runtime it drives. Expected
failures are data (status oom | timeout | unsupported | skipped | mismatch); anything else is a
bug and propagates, so the job fails.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmbench.export.onnx import parity_failure
from rmbench.models.build import without_torch
from rmbench.models.data import load_set
from rmbench.plan.cells import parse_params
from rmbench.plan.glue import read_json, write_json
from rmbench.probes.flops import achieved_gflops
from rmbench.probes.gemm import best_probe, probe_ceiling, run_gemm_launch
from rmbench.probes.provenance import nvidia_gpu_present
from rmbench.runtimes import Unsupported, runtime_class, spare_torch_import
from rmbench.runtimes.batching import batch_plan, make_batches, padding_waste
from rmbench.studies.colocation import split_threads, time_colocated
from rmbench.studies.timing import percentile_summary

OOM_MESSAGES = ("out of memory", "failed to allocate memory", "cudaerrormemoryallocation")


class LaunchTimeout(Exception):
    pass


def is_oom(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    message = str(error).lower()
    return any(m in message for m in OOM_MESSAGES)


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raises LaunchTimeout when the block runs longer than `seconds` (main thread only). Yields a
    list that holds the timeout once it fired: library code that catches every exception (as
    transformers' from_pretrained does) may raise another one in its place."""
    fired: list[LaunchTimeout] = []

    def expire(signum, frame):
        fired.append(LaunchTimeout(f"launch exceeded {seconds:g} s"))
        raise fired[0]

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Workload:
    """What a scenario scores: the pairs, their token lengths (for batch planning and FLOP
    counts), the model folder and the launch settings."""

    def __init__(self, rows: list[dict], model: str, model_dir, settings: dict, limit: int | None):
        self.pairs = [(r["prompt"], r["response"]) for r in rows]
        self.rows, self.model, self.model_dir, self.settings = rows, model, model_dir, settings
        self.limit = limit  # the most tokens a row keeps (the runtime's max_length: models.row_limit)

    def counted(self) -> bool:
        """Whether every row carries its token count (sample sets written by the sample_set rule do)."""
        return all(f"tokens_{self.model}" in r for r in self.rows)

    def lengths(self) -> list[int]:
        """Each pair's token count after truncation, from the sample set's counts."""
        key = f"tokens_{self.model}"
        missing = [r["id"] for r in self.rows if key not in r]
        if missing:
            raise ValueError(
                f"rows {missing[:3]} have no '{key}' (sample sets written by the sample_set rule do)"
            )
        return [min(r[key], self.limit) for r in self.rows]

    def rows_cut(self) -> int | None:
        """How many rows lose tokens to the limit (None where the rows carry no counts)."""
        return sum(r[f"tokens_{self.model}"] > self.limit for r in self.rows) if self.counted() else None


def latency_scenario(runtime, work: Workload) -> dict:
    """Every row scored alone after warm-up rows: per-row latency percentiles and FLOP/s."""
    measured = runtime.time_rows_alone(work.pairs, work.settings["warmup_rows"])
    latencies = measured["latencies_ms"]
    gflops = achieved_gflops(work.model_dir, work.rows, work.model, latencies, work.limit)
    return percentile_summary(latencies) | {"gflops": gflops} | measured


def batching_scenario(runtime, work: Workload) -> dict:
    """The whole set in batches planned by the cell's strategy and size (after warm-up batches):
    throughput, padding waste and per-batch latency."""
    lengths = work.lengths()
    batches = make_batches(lengths, *batch_plan(runtime.options))
    pad_to = work.limit if runtime.padding == "max_length" else None
    measured = runtime.time_batches(work.pairs, batches, work.settings["warmup_rows"])
    n, wall_s = sum(len(b) for b in batches), measured["wall_s"]  # rows scored (repeat: copies too)
    return {
        "throughput_rps": n / wall_s,
        "row_ms": wall_s * 1e3 / n,
        "padding_waste": padding_waste(lengths, batches, pad_to),
        "n_batches": len(batches),
        "batch_p50_ms": float(np.percentile(measured["batch_ms"], 50)),
        "batch_p95_ms": float(np.percentile(measured["batch_ms"], 95)),
        "batches": batches,
    } | measured


def concurrency_scenario(runtime, work: Workload) -> dict:
    """The whole set through N concurrent clients, one row per request, engines shared or
    independent as the cell's mode says: per-request latency percentiles and throughput."""
    clients, mode = int(runtime.options["clients"]), runtime.options["mode"]
    measured = runtime.time_concurrent(
        work.pairs, clients, mode, work.settings["warmup_rows"], work.settings["threads"]
    )
    n, wall_s = len(work.pairs), measured["wall_s"]
    rates = {"throughput_rps": n / wall_s, "row_ms": wall_s * 1e3 / n}
    return percentile_summary(measured["latencies_ms"]) | rates | measured


def load_scenario(runtime, work: Workload) -> dict:
    """A trainer's load on a service (rmbench.studies.load): the cell's clients send its number of
    one-sample requests, a share of them malformed. Each row's first reward is its score, checked
    against the reference like every launch; a row's rewards must agree across batches, and
    every malformed body must get its 4xx and no good one a 4xx."""
    options = runtime.options
    if work.settings["warmup_rows"]:  # the service's first call, untimed
        runtime.score(work.pairs[: work.settings["warmup_rows"]])
    measured = runtime.time_load(
        work.pairs, int(options["clients"]), int(options["requests"]), float(options.get("malformed", 0))
    )
    problems = [
        f"{measured[key]} {what}"
        for key, what in (
            ("malformed_not_4xx", "malformed requests not answered 4xx"),
            ("well_formed_4xx", "good requests answered 4xx"),
        )
        if measured[key]
    ]
    if measured["reward_spread"] > work.settings["tolerance"]:
        problems.append(f"a row's rewards differ by {measured['reward_spread']:.3g} between requests")
    if problems:
        measured["mismatch"] = "; ".join(problems)
    return measured


def colocation_scenario(runtime, work: Workload) -> dict:
    """The set's own pairs first, checked against the reference like every launch; then the
    generator's replies to the set's prompts scored alone and beside the generator
    (rmbench.studies.colocation)."""
    split = runtime.options.get("split", "shared")
    measured = runtime.time_rows_alone(work.pairs, work.settings["warmup_rows"])
    prompts = [prompt for prompt, _ in work.pairs]
    colocated = time_colocated(runtime, prompts, work.settings["generator"], split, work.settings["threads"])
    if colocated["score_drift"] > work.settings["tolerance"]:
        colocated["mismatch"] = (
            f"the replies' scores moved by {colocated['score_drift']:.3g} beside the generator "
            f"(> {work.settings['tolerance']:g})"
        )
    return {"scores": measured["scores"], "latencies_ms": measured["latencies_ms"]} | colocated


def launch_threads(cell: dict, settings: dict, options: dict) -> int:
    """The runtime's intra-op threads: the study's, or one per pinned core in a co-location split."""
    if cell["study"] == "colocation":
        return split_threads(options.get("split", "shared"), settings["threads"])
    return settings["threads"]


def wants_ceiling(cell: dict, work: Workload) -> bool:
    """Whether the launch probes the GEMM ceiling: asked for, on the CPU, and its rows carry the
    token counts its FLOPs need."""
    return bool(work.settings.get("ceiling_probe")) and cell["device"] == "cpu" and work.counted()


def probe_launch_ceiling(work: Workload) -> dict:
    """The fp32 GEMM ceiling at the median length of the launch's rows, at its threads."""
    return probe_ceiling(work.model_dir, int(np.median(work.lengths())), work.settings["threads"])


def launch_ceiling(work: Workload, achieved_gflops: float, before: dict) -> dict:
    """The fp32 GEMM ceiling probed before the engine loads and after the timed region (engine
    closed), the higher of the two, and the launch's achieved FLOP/s as a fraction of it."""
    ceiling = best_probe([before, probe_launch_ceiling(work)])
    return ceiling | {"fraction_of_ceiling": achieved_gflops / ceiling["ceiling_gflops"]}


def run_launch(
    cell: dict,
    rows: list[dict],
    reference: list[float],
    model_dir,
    onnx_path,
    settings: dict,
    runtime_options: dict | None = None,
    gate: dict | None = None,
) -> dict:
    """Runs one launch in this process and returns its result record (without provenance). With
    `gate`, the parity report of an export allowed to fail (the fused graph): a failed gate makes
    the launch a mismatch, reported with the gate's numbers and not timed."""
    record = {"cell": cell, "settings": settings, "status": None, "reason": None, "metrics": {}}
    if gate is not None and (failure := parity_failure(gate)):
        return record | {"status": "mismatch", "reason": failure}
    if cell["device"] == "cuda" and not nvidia_gpu_present():
        # Said before any runtime imports torch or ORT: a skipped GPU cell costs little.
        return record | {"status": "skipped", "reason": "no NVIDIA GPU on this machine (no /dev/nvidia*)"}
    cls = runtime_class(cell["runtime"])
    reason = cls.unavailable_reason(cell["device"], runtime_options)
    if reason:
        return record | {"status": "skipped", "reason": reason}
    threads = launch_threads(cell, settings, runtime_options or {})
    runtime = cls(model_dir, onnx_path, cell["device"], threads, settings["max_length"], runtime_options)
    work = Workload(rows, cell["model"], model_dir, settings, runtime.max_length)
    ceiling_before = probe_launch_ceiling(work) if wants_ceiling(cell, work) else None
    started = time.perf_counter()
    fired = []
    try:
        with time_limit(settings["timeout_s"]) as fired:
            runtime.load()
            load_s = time.perf_counter() - started
            measured = SCENARIOS[cell["study"]].measure(runtime, work)
            load_s = measured.pop("load_s", load_s)  # a runtime in another process reports its own
        record["runtime"] = runtime.describe()
    except LaunchTimeout as e:
        return record | {"status": "timeout", "reason": str(e)}
    except Unsupported as e:
        return record | {"status": "unsupported", "reason": str(e)}
    except Exception as e:
        if fired:
            return record | {"status": "timeout", "reason": f"{fired[0]} (surfaced as {type(e).__name__})"}
        if is_oom(e):
            return record | {"status": "oom", "reason": f"{type(e).__name__}: {e}"[:500]}
        raise
    finally:
        runtime.close()
    errors = np.abs(np.asarray(measured["scores"]) - np.asarray(reference, dtype=float))
    tolerance = settings["tolerance"]
    rows_cut = work.rows_cut()  # rows that lost tokens to the limit (None: the rows carry no counts)
    record["metrics"] = {
        "n_rows": len(rows),
        "load_s": load_s,
        "launch_s": time.perf_counter() - started,
        "max_abs_err": float(errors.max()),
        "tolerance": tolerance,
        **({} if rows_cut is None else {"rows_cut": rows_cut}),
        **measured,  # the scenario's metrics, per-row scores (and what else the runtime measured)
    }
    if ceiling_before is not None and np.isfinite(measured.get("gflops", np.nan)):
        record["metrics"] |= launch_ceiling(work, measured["gflops"], ceiling_before)
    if measured.get("mismatch"):  # a scenario's own check (co-location: the replies' scores)
        return record | {"status": "mismatch", "reason": measured["mismatch"]}
    if errors.max() > tolerance:
        worst = int(errors.argmax())
        return record | {
            "status": "mismatch",
            "reason": (
                f"score of row {rows[worst]['id']} differs from the reference by {errors[worst]:.3g} "
                f"> {tolerance:g}"
            ),
        }
    return record | {"status": "ok"}


def runtime_launch(cell: dict, files: dict, settings: dict, repo: Path) -> dict:
    """A launch that times a runtime on the cell's rows, checked against their reference scores."""
    rows = load_set(files["rows"])
    reference = read_json(files["reference"])
    if reference["ids"] != [r["id"] for r in rows]:
        raise RuntimeError(f"{files['reference']} does not match {files['rows']}")
    scores = reference["scores"]
    if settings.get("rows"):  # a study that scores only the first rows of its set
        rows, scores = rows[: settings["rows"]], scores[: settings["rows"]]
    options = settings.get("options", {}) | parse_params(cell["params"])
    options |= {
        "binary": files.get("binary"),
        "operators": files.get("operators"),  # the native engine's, where the export calls them
        "cache_root": str(Path(repo, "results/inductor-cache")),
    }
    spare_torch_import(cell["runtime"], cell["device"], options)  # ORT and native launches run no PyTorch
    gate = files.get("fused_parity")  # the fused graph's gate may fail: then not timed
    return run_launch(
        cell,
        rows,
        scores,
        files["model"],
        files.get("onnx"),
        settings,
        options,
        read_json(gate) if gate else None,
    )


def gemm_launch(cell: dict, files: dict, settings: dict, repo: Path) -> dict:
    """A launch that times a GEMM library on the model's layer shapes (rmbench.probes.gemm)."""
    return run_gemm_launch(cell, files["model"], settings)


def tokenizer_launch(cell: dict, files: dict, settings: dict, repo: Path) -> dict:
    """A launch that times a tokenizer on the cell's rows (rmbench.studies.tokenizer)."""
    from rmbench.studies.tokenizer import run_tokenizer_launch

    without_torch()  # it times tokenizers only
    return run_tokenizer_launch(cell, load_set(files["rows"]), files["model"], files.get("binary"), settings)


@dataclass(frozen=True)
class Scenario:
    """How a study's launch runs: `launch(cell, files, settings, repo)` returns its record;
    `measure(runtime, work)`, where the launch times a runtime, is what run_launch times."""

    launch: Callable[..., dict]
    measure: Callable | None = None


# Every study's launch, in one place (rmbench.plan.studies declares what each study compares).
SCENARIOS = {
    "latency": Scenario(runtime_launch, latency_scenario),
    "zerocopy": Scenario(runtime_launch, latency_scenario),
    "compile": Scenario(runtime_launch, latency_scenario),
    "decomposition": Scenario(runtime_launch, latency_scenario),
    "batching": Scenario(runtime_launch, batching_scenario),
    "concurrency": Scenario(runtime_launch, concurrency_scenario),
    "colocation": Scenario(runtime_launch, colocation_scenario),
    "load": Scenario(runtime_launch, load_scenario),
    "gemm": Scenario(gemm_launch),
    "tokenizer": Scenario(tokenizer_launch),
}


def launch_cell(cell: dict, files: dict, settings: dict, repo: Path) -> dict:
    """One launch of any study's cell, in this process: its record, without provenance. `files`:
    the job's named inputs (rows, reference, model, onnx, binary, ...)."""
    if settings.get("unsupported"):  # the runtime cannot score this model's family: said, untimed
        record = {"cell": cell, "settings": settings, "status": "unsupported", "metrics": {}}
        return record | {"reason": settings["unsupported"]}
    return SCENARIOS[cell["study"]].launch(cell, files, settings, repo)


def launch_from_spec(spec_path: Path) -> None:
    """One launch a spec file describes (rmbench.studies.advise writes them), in this process;
    its record lands beside the spec, provenance included."""
    from rmbench.probes.provenance import provenance

    spec = read_json(spec_path)
    cell = spec["cell"]
    rows, reference = load_set(spec["rows"]), read_json(spec["reference"])["scores"]
    spare_torch_import(cell["runtime"], "cpu", spec["options"])
    record = run_launch(cell, rows, reference, spec["model"], spec["onnx"], spec["settings"], spec["options"])
    record["provenance"] = provenance(spec["repo"], "cpu")
    write_json(record, Path(str(spec_path).removesuffix(".spec.json") + ".json"))


if __name__ == "__main__":  # python -m rmbench.studies.launch SPEC: advise's fresh process per launch
    import sys

    launch_from_spec(Path(sys.argv[1]))
