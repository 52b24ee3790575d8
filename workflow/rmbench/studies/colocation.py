"""The co-location scenario: does a faster scorer leave more of the machine to generation?

One launch, one scorer runtime, on the same cores as a rollout generator (rmbench.models.generator,
its own process). In turn:

1. generation alone: the generator writes a reply to each prompt of the set;
2. scoring alone: the scorer scores those (prompt, reply) pairs, one at a time;
3. both together: the generator runs again while the scorer scores each reply as it arrives,
   through a bounded queue (with `queue` replies waiting, the generator waits too).

A core split says where each runs: `shared` puts both on every core, each with the study's
threads; `separate` pins the generator to one core and the scorer to another, one thread each.
Greedy decoding makes the replies the same in every step, so the scores of steps 2 and 3 must
agree: co-location changes the time, not the result.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # workflow/, where rmbench lives
SPLITS = ("shared", "separate")


def core_split(split: str, cores: list[int]) -> tuple[list[int], list[int]]:
    """(scorer's cores, generator's cores) for a split of this process's cores."""
    if split == "shared":
        return cores, cores
    if split == "separate":
        if len(cores) < 2:
            raise ValueError(f"core split separate needs 2 cores; this process may use {len(cores)}")
        return cores[1:2], cores[:1]
    raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split}")


def split_threads(split: str, threads: int) -> int:
    """Intra-op threads of each engine: one per pinned core, else the study's."""
    return 1 if split == "separate" else threads


def pin_tree(pid: int, cores: list[int]) -> None:
    """Every thread of `pid` and of its child processes in its process group (the native engine)
    on `cores` only. A child in a group of its own is not the scorer's: a test session's
    background smoke run, say, which would otherwise be pinned with the tests' process."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cores)
        except (ProcessLookupError, PermissionError):
            pass  # a thread that just ended
        for child in (task / "children").read_text().split() if (task / "children").exists() else []:
            try:
                if os.getpgid(int(child)) == os.getpgid(pid):
                    pin_tree(int(child), cores)
            except ProcessLookupError:
                pass  # a child that just ended


class Generator:
    """The generator's process on its cores, loaded and warmed up before any pass is timed. At most
    `queue` replies wait for the consumer: it takes one (a line to the generator's stdin) when it
    is done with it, and the generator waits for room before the next reply."""

    def __init__(
        self,
        settings: dict,
        prompts: list[str],
        cores: list[int],
        threads: int,
        queue_size: int,
        passes: int = 1,
    ):
        self._prompts = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)  # noqa: SIM115
        json.dump(prompts, self._prompts)
        self._prompts.close()
        self.n = len(prompts)
        command = [
            sys.executable,
            "-m",
            "rmbench.models.generator",
            "--model-dir",
            str(settings["model_dir"]),
        ]
        command += ["--prompts", self._prompts.name, "--new-tokens", str(settings["new_tokens"])]
        command += ["--threads", str(threads), "--cores", ",".join(map(str, cores))]
        command += ["--queue", str(queue_size), "--passes", str(passes)]
        # The generator runs PyTorch even beside a scorer whose process was told not to import it.
        env = {k: v for k, v in os.environ.items() if k != "USE_TORCH"}
        env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        try:
            if not json.loads(self._line()).get("ready"):
                raise RuntimeError("the generator did not say it was ready")
        except BaseException:
            self.close()
            raise

    def _line(self) -> str:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the generator exited with code {self.process.wait()}")
        return line

    def _write(self, line: str) -> None:
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it had made every reply and exited

    def run(self, consume=None) -> tuple[list[str], dict]:
        """One pass: the replies in prompt order and the generator's summary. `consume(i, reply)`
        is called on each reply as it arrives (None: just collect), and the reply is taken when
        it returns."""
        self._write("go")
        replies = [""] * self.n
        while True:
            item = json.loads(self._line())
            if item.get("done"):
                return replies, item
            replies[item["i"]] = item["reply"]
            if consume is not None:
                consume(item["i"], item["reply"])
            self._write("")

    def close(self) -> None:
        """Ends the process: it exits by itself after its last pass, or at the end of its stdin."""
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        Path(self._prompts.name).unlink(missing_ok=True)


def score_each(runtime, pairs) -> tuple[list[float], list[float]]:
    """Each pair scored alone: scores and per-row milliseconds, timed around score() as the
    co-located step times each reply (not Runtime.time_rows_alone, which a runtime may time in
    its own process), so that the two steps' times compare."""
    scores, latencies = [], []
    for pair in pairs:
        start = time.perf_counter()
        scores.append(float(runtime.score([pair])[0]))
        latencies.append((time.perf_counter() - start) * 1e3)
    return scores, latencies


def time_colocated(runtime, prompts: list[str], settings: dict, split: str, threads: int) -> dict:
    """Steps 1-3 (module docstring) for a loaded scorer: generation tokens/s, scoring rows/s,
    end-to-end rows/s alone and together, and each one's slowdown when co-located. One generator
    process runs both passes, loaded before either: neither pays its start or its model's load."""
    cores = sorted(os.sched_getaffinity(0))
    scorer_cores, generator_cores = core_split(split, cores)
    pin_tree(os.getpid(), scorer_cores)
    gen_threads = split_threads(split, threads)
    try:
        generator = Generator(settings, prompts, generator_cores, gen_threads, settings["queue"], passes=2)
        try:
            return time_passes(runtime, prompts, generator) | {
                "scorer_cores": scorer_cores,
                "generator_cores": generator_cores,
                "generator_threads": gen_threads,
            }
        finally:
            generator.close()
    finally:
        pin_tree(os.getpid(), cores)  # the process's cores back: its record names the host it ran on


def time_passes(runtime, prompts: list[str], generator: Generator) -> dict:
    """Generating then scoring (steps 1 and 2), then both at once (step 3), from a loaded
    generator's two passes."""
    start = time.perf_counter()
    replies, alone = generator.run()
    pairs = list(zip(prompts, replies))
    scores_alone, latencies_alone = score_each(runtime, pairs)
    sequential_s = time.perf_counter() - start  # generate everything, then score everything

    scores_together, latencies_together = [0.0] * len(prompts), [0.0] * len(prompts)

    def consume(i: int, reply: str) -> None:
        row_start = time.perf_counter()
        scores_together[i] = float(runtime.score([(prompts[i], reply)])[0])
        latencies_together[i] = (time.perf_counter() - row_start) * 1e3

    start = time.perf_counter()
    replies_again, together = generator.run(consume)
    together_s = time.perf_counter() - start
    if replies_again != replies:
        raise RuntimeError(
            "greedy decoding gave other replies the second time: the generator is not deterministic"
        )
    drift = float(np.max(np.abs(np.subtract(scores_together, scores_alone))))
    n = len(prompts)
    gen_alone, gen_together = (
        alone["new_tokens"] / alone["wall_s"],
        together["new_tokens"] / together["wall_s"],
    )
    score_alone, score_together = float(np.median(latencies_alone)), float(np.median(latencies_together))
    return {
        "gen_tokens_per_s_alone": gen_alone,
        "gen_tokens_per_s_together": gen_together,
        "gen_slowdown": gen_alone / gen_together,
        "score_p50_ms_alone": score_alone,
        "score_p50_ms_together": score_together,
        "score_slowdown": score_together / score_alone,
        "scores_per_s_together": n / (sum(latencies_together) / 1e3),
        "e2e_rows_per_s": n / together_s,
        "e2e_row_ms": together_s * 1e3 / n,
        "sequential_rows_per_s": n / sequential_s,
        "colocation_gain": sequential_s / together_s,
        "score_drift": drift,
        "generated_tokens": together["new_tokens"],
    }
