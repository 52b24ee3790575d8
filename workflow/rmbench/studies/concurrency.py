"""The concurrency scenario for runtimes that score inside this process: N clients send the
set's rows at once, one row per request, and each request is timed from text in to score out.

Modes (study.md, "Concurrency"; the last two go beyond the paper):
- shared: N client threads call one engine.
- independent_threads: N engines in this process, one per client thread (the paper's setup).
- independent_partitioned: as independent_threads, each engine with cores // N intra-op threads,
  so that the pools no longer fight over the cores (at least one thread each).
- independent_processes: N worker processes, one engine and one client each.

Client threads pull the next row from one shared counter, so a slow engine serves fewer rows;
worker processes take every N-th row. The wall clock starts when every engine is loaded and
warm, and stops when the last request is answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # workflow/, where rmbench lives
MODES = ("shared", "independent_threads", "independent_partitioned", "independent_processes")


class EngineLoadError(RuntimeError):
    """An extra engine failed to load; the message says which one of how many (and why)."""


def partitioned_threads(cores: int, clients: int) -> int:
    """Intra-op threads per engine when N engines split the machine's cores."""
    return max(1, cores // clients)


def load_engines(runtime, clients: int, threads: int, first_usable: bool) -> list:
    """`clients` engines like `runtime` with `threads` each; `runtime` itself is the first when
    `first_usable`. A failure names the engine it happened at (the OOM capacity of a device)."""
    engines = [runtime] if first_usable else []
    while len(engines) < clients:
        engine = runtime.clone(threads=threads)
        try:
            engine.load()
        except Exception as e:
            engine.close()
            raise EngineLoadError(f"engine {len(engines) + 1} of {clients} failed to load: {e}") from e
        engines.append(engine)
    return engines


class Counter:
    """The next of `n` work items for client threads that pull from one shared counter, so a
    slow client takes fewer; after `stop()` it hands out none."""

    def __init__(self, n: int):
        self.n, self.next, self.lock = n, 0, threading.Lock()

    def take(self) -> int | None:
        with self.lock:
            if self.next >= self.n:
                return None
            self.next += 1
            return self.next - 1

    def stop(self) -> None:
        with self.lock:
            self.next = self.n


def run_together(targets: list, name: str) -> float:
    """One thread per target, all started at once: the wall time until the last one ends."""
    threads = [threading.Thread(target=t, name=f"{name}-{k}") for k, t in enumerate(targets)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def run_threads(engines: list, pairs: list, warmup_rows: int) -> dict:
    """One client thread per engine entry (the same engine may appear N times: shared)."""
    for engine in {id(e): e for e in engines}.values():
        for pair in pairs[:warmup_rows]:
            engine.score([pair])
    scores, latencies = [None] * len(pairs), [None] * len(pairs)
    rows, failures = Counter(len(pairs)), []

    def client(engine):
        try:
            while (i := rows.take()) is not None:
                start = time.perf_counter()
                scores[i] = float(engine.score([pairs[i]])[0])
                latencies[i] = (time.perf_counter() - start) * 1e3
        except BaseException as e:  # noqa: BLE001  (re-raised in the launch's thread, where it is classified)
            failures.append(e)
            rows.stop()  # the others stop too

    wall_s = run_together([lambda e=e: client(e) for e in engines], "client")
    if failures:
        raise failures[0]
    return {"scores": scores, "latencies_ms": latencies, "wall_s": wall_s}


def start_together(procs: list, what: str) -> None:
    """Waits until every worker process says "ready" (loaded and warm), then tells them all "go"
    (a line on stdin), so their timed work overlaps. A worker that fails first is named."""
    for k, proc in enumerate(procs):
        line = proc.stdout.readline()
        while line and line.strip() != "ready":  # a library's own chatter on stdout is skipped
            line = proc.stdout.readline()
        if not line:
            proc.wait()
            message = (proc.stderr.read().strip().splitlines() or ["no message"])[-1]
            raise EngineLoadError(f"{what} {k + 1} of {len(procs)} failed to load: {message}")
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()


def stop_all(procs: list) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def shard(n_rows: int, workers: int) -> list[list[int]]:
    """Rows k, k+N, k+2N, ... for worker k (processes share no counter)."""
    return [list(range(k, n_rows, workers)) for k in range(workers)]


def run_processes(runtime, clients: int, pairs: list, warmup_rows: int, threads: int) -> dict:
    """N worker processes (python -m rmbench.studies.worker), each loading its own engine like `runtime`
    and scoring its shard of the rows one at a time."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])}
    shards = shard(len(pairs), clients)
    procs = []
    try:
        for rows in shards:
            spec = {
                "runtime": runtime.name,
                "args": {
                    k: str(v) if isinstance(v, Path) else v
                    for k, v in runtime.constructor_args(threads).items()
                },
                "pairs": [pairs[i] for i in rows],
                "warmup_rows": warmup_rows,
            }
            proc = subprocess.Popen(
                [sys.executable, "-m", "rmbench.studies.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            proc.stdin.write(json.dumps(spec) + "\n")
            proc.stdin.flush()
            procs.append(proc)
        start_together(procs, "engine process")
        scores, latencies, walls = [None] * len(pairs), [None] * len(pairs), []
        for k, proc in enumerate(procs):
            out, err = proc.communicate()
            if proc.returncode != 0:
                message = (err.strip().splitlines() or ["no message"])[-1]
                raise RuntimeError(f"engine process {k + 1} of {clients} exited {proc.returncode}: {message}")
            result = json.loads(out.strip().splitlines()[-1])
            for i, score, ms in zip(shards[k], result["scores"], result["latencies_ms"]):
                scores[i], latencies[i] = score, ms
            walls.append(result["wall_s"])
        return {"scores": scores, "latencies_ms": latencies, "wall_s": max(walls)}
    finally:
        stop_all(procs)


def run_clients(runtime, pairs: list, clients: int, mode: str, warmup_rows: int, cores: int) -> dict:
    """The whole set through `clients` concurrent clients in `mode`; `runtime` is loaded."""
    if mode not in MODES:
        raise ValueError(f"unknown concurrency mode '{mode}' (known: {', '.join(MODES)})")
    threads = partitioned_threads(cores, clients) if mode == "independent_partitioned" else runtime.threads
    if mode == "independent_processes":
        runtime.close()  # the workers hold the engines; this one would only take memory
        measured = run_processes(runtime, clients, pairs, warmup_rows, threads)
        engines = clients
    elif mode == "shared":
        measured = run_threads([runtime] * clients, pairs, warmup_rows)
        engines = 1
    else:
        first_usable = threads == runtime.threads
        if not first_usable:
            runtime.close()
        extra = load_engines(runtime, clients, threads, first_usable)
        try:
            measured = run_threads(extra, pairs, warmup_rows)
        finally:
            for engine in extra:
                if engine is not runtime:
                    engine.close()
        engines = clients
    return measured | {"engines": engines, "threads_per_engine": threads, "threads_total": threads * engines}
