"""The native C++ engine (native/, built by the native_build rule) on the ONNX Runtime C++ API.

It links the same libonnxruntime as ort_python, so the two differ in language only. A launch
runs the engine once as a child process that times every row itself (raw text pair in, float
score out, tokenization included), the same region the Python runtimes time. score(), for a
caller that sends rows as they come (co-location, the service), keeps one engine process loaded
(`rmscore --serve`) and sends it each row.

A chat-templated model's template reaches the engine compiled (rmbench.models.chat_form): every row is
checked against the template here before the engine sees it, and a row the form would render
differently is refused (ChatFormError), never scored on another text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

from rmbench.models.build import chat_messages
from rmbench.models.chat_form import ChatFormError, compile_form, folder_renderer, mismatch
from rmbench.models.data import write_jsonl
from rmbench.models.families import family_of_folder
from rmbench.runtimes.base import ONNX_FILE_SETTINGS, Runtime, Unsupported
from rmbench.runtimes.batching import STRATEGIES, batch_plan
from rmbench.studies.concurrency import MODES, partitioned_threads, shard, start_together, stop_all


class NativeError(RuntimeError):
    """The engine exited with an error (its one-line message and exit code)."""


def engine_message(stderr: str) -> str:
    """The engine's own one-line message: the last line of its stderr, after any ORT log lines."""
    return stderr.strip().splitlines()[-1] if stderr.strip() else "no message"


def engine_row(i: int, row) -> dict:
    """One input line of the engine: a (prompt, reply) pair, or a text rendered already (a str)."""
    if isinstance(row, str):
        return {"id": str(i), "text": row}
    return {"id": str(i), "prompt": row[0], "response": row[1]}


class NativeRuntime(Runtime):
    name = "native"
    studies = ("latency", "batching", "concurrency", "decomposition", "zerocopy", "colocation")
    needs_onnx = True
    uses_torch = False
    uses_native_engine = True
    settings = Runtime.settings | ONNX_FILE_SETTINGS

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        from rmbench.runtimes.ort_python import OrtPythonRuntime  # the same library answers the same

        return OrtPythonRuntime.unavailable_reason(device)

    @classmethod
    def family_reason(cls, declared: dict, options: dict) -> str | None:
        if declared["native_tokenizer"] is None:
            return (
                f"the native engine does not tokenize {declared['name']}'s rows yet: the family "
                "declares no native tokenizer"
            )
        if "right" not in declared["padding_sides"]:
            return f"the native engine pads on the right, which {declared['name']} does not allow"
        return super().family_reason(declared, options)

    def load(self) -> None:
        self.binary = Path(self.options.get("binary", ""))
        if not self.binary.is_file():
            raise FileNotFoundError(f"native engine not built: {self.binary} (run the native_build rule)")
        self.chat = None  # a chat model's (template renderer, compiled form, the form's file)
        if family_of_folder(self.model_dir)["input"] == "chat":
            self.chat = self._chat_form()
        self.last_run: dict = {}
        self.resident: subprocess.Popen | None = None  # started by the first score()
        self.resident_lock = threading.Lock()  # one row at a time through its pipes

    def _chat_form(self) -> tuple:
        """The model's template, compiled into the engine's form, written where the engine reads it."""
        jinja = folder_renderer(self.model_dir)
        try:
            form = compile_form(jinja)
        except ChatFormError as e:
            raise Unsupported(f"the native engine cannot render {self.model_dir}'s chat template: {e}") from e
        folder = tempfile.mkdtemp(prefix="rmbench-chat-form-")
        weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        path = Path(folder) / "chat_form.json"
        path.write_text(json.dumps(form, ensure_ascii=False))
        return jinja, form, path

    def check_rows(self, pairs: list[tuple[str, str]]) -> None:
        """Refuses the rows whose template text the engine's form would not give exactly."""
        if self.chat is None:
            return
        jinja, form, _ = self.chat
        refused = [
            (i, why)
            for i, row in enumerate(pairs)  # a text rendered already is tokenized as it stands
            if not isinstance(row, str) and (why := mismatch(form, jinja, chat_messages(*row)))
        ]
        if refused:
            raise ChatFormError(
                f"{len(refused)} of {len(pairs)} rows refused; row {refused[0][0]}: {refused[0][1]}"
            )

    def _invoke(self, pairs: list[tuple[str, str]], args: list[str], result_flag: str) -> str:
        """Runs the engine over `pairs`; returns the text of the file it wrote."""
        try:
            self.check_rows(pairs)
        except ChatFormError as e:  # a launch's rows: the cell cannot be measured on them
            raise Unsupported(f"the native engine's chat form: {e}") from e
        with tempfile.TemporaryDirectory() as tmp:
            rows, out = Path(tmp) / "rows.jsonl", Path(tmp) / "result"
            write_jsonl([engine_row(i, row) for i, row in enumerate(pairs)], rows)
            cmd = self.command("--input", str(rows), result_flag, str(out), *args)
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise NativeError(f"rmscore exited {proc.returncode}: {engine_message(proc.stderr)}")
            return out.read_text()

    def command(self, *args: str) -> list[str]:
        """The engine's command line: its tokenizer and truncation, then `args`."""
        cmd = [str(self.binary), "--tokenizer", str(self.model_dir), "--max-length", str(self.max_length)]
        if "word_cache" in self.options:  # words the SentencePiece tokenizer remembers
            cmd += ["--word-cache", str(self.options["word_cache"])]
        if self.chat is not None:
            cmd += ["--chat-form", str(self.chat[2])]
        return cmd + list(args)

    def engine_args(self, threads: int | None = None) -> list[str]:
        threads = self.threads if threads is None else threads
        return ["--model", str(self.onnx_path), "--device", self.device, "--threads", str(threads)]

    def run(self, pairs: list[tuple[str, str]], *args: str, threads: int | None = None) -> dict:
        """Scores `pairs` with extra command-line options; returns the engine's JSON result."""
        self.last_run = json.loads(self._invoke(pairs, [*self.engine_args(threads), *args], "--output"))
        return self.last_run

    def encodings(self, pairs: list[tuple[str, str]]) -> list[dict]:
        """The native tokenizer's input_ids and token_type_ids for each pair (template and
        truncation included); no model is loaded."""
        return [json.loads(line) for line in self._invoke(pairs, [], "--dump-tokens").splitlines()]

    def tokenize_times(
        self, pairs: list[tuple[str, str]], repeat: int, warmup: int
    ) -> tuple[list[float], list[float]]:
        """Microseconds per pair for tokenization alone (template and truncation included),
        averaged over `repeat` passes after `warmup` untimed pairs, and the mean of each pass;
        no model is loaded."""
        args = ["--tokenize-only", "--repeat", str(repeat), "--warmup", str(warmup)]
        found = json.loads(self._invoke(pairs, args, "--output"))["tokenize"]
        return found["per_pair_us"], found["pass_us"]

    def score(self, pairs):
        """Each pair through the resident engine (`--serve`), one row and its answer at a time."""
        self.check_rows(pairs)
        with self.resident_lock:
            engine = self.resident or self._start_resident()
            scores = []
            for i, row in enumerate(pairs):
                try:
                    engine.stdin.write(json.dumps(engine_row(i, row)) + "\n")
                    engine.stdin.flush()
                except BrokenPipeError:
                    pass  # it has exited: the answer below reports its exit code and message
                scores.append(self._resident_answer()["score"])
            return scores

    def _start_resident(self) -> subprocess.Popen:
        cmd = self.command("--serve", *self.engine_args())
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.resident = subprocess.Popen(cmd, text=True, bufsize=1, **pipes)
        self.last_run = self._resident_answer()  # its ready line: library, tokenizer, options
        return self.resident

    def _resident_answer(self) -> dict:
        line = self.resident.stdout.readline()
        if not line:  # it exited: its one-line message comes last on stderr
            engine, self.resident = self.resident, None
            _, err = engine.communicate()
            raise NativeError(f"rmscore --serve exited {engine.returncode}: {engine_message(err)}")
        return json.loads(line)

    def close(self) -> None:
        engine, self.resident = getattr(self, "resident", None), None
        if engine is not None:
            try:
                engine.communicate(timeout=10)  # end of input: it exits
            except subprocess.TimeoutExpired:
                engine.kill()
                engine.communicate()

    def time_rows_alone(self, pairs, warmup_rows):
        switches = []
        for key in ("zero_copy", "prealloc", "io_binding"):  # the zero-copy ablation's variants
            if key in self.options:
                switches += [f"--{key.replace('_', '-')}", self.options[key]]
        result = self.run(pairs, "--warmup", str(warmup_rows), "--batching", "none", *switches)
        rows = result["rows"]
        return {
            "latencies_ms": [r["total_ms"] for r in rows],
            "scores": [r["score"] for r in rows],
            "tokenize_us": [r["tokenize_us"] for r in rows],
            "infer_ms": [r["infer_ms"] for r in rows],
            "load_s": result["load_ms"] / 1e3,
        }

    def time_batches(self, pairs, batches, warmup_batches):
        """The engine plans the same batches itself (same rules, same token lengths) and times
        them; a plan that differs from the Python one is a bug, not a measurement."""
        strategy, size, budget, max_waste = batch_plan(self.options)
        if strategy not in STRATEGIES:
            what = f"'{strategy}' batching"
        elif self.padding != "longest":
            what = f"padding to {self.padding}"
        elif self.padding_side == "left":
            what = "padding on the left"
        else:
            what = None
        if what:
            raise Unsupported(f"the native engine has no {what} (an experiment for the Python runtimes)")
        args = [
            "--batching",
            strategy.replace("_", "-"),
            "--batch-size",
            str(size),
            "--warmup",
            str(warmup_batches),
        ]
        if budget:
            args += ["--token-budget", str(budget)]
        args += ["--max-waste", repr(max_waste)]  # repr: the same double in C++'s strtod
        result = self.run(pairs, *args, "--warmup", str(warmup_batches))
        if result["batches"] != batches:
            raise NativeError(
                f"the engine planned other batches than rmbench.runtimes.batching for {strategy} b={size}"
            )
        return {
            "scores": [r["score"] for r in result["rows"]],
            "batch_ms": result["batch_ms"],
            "wall_s": result["wall_s"],
            "load_s": result["load_ms"] / 1e3,
        }

    def time_concurrent(self, pairs, clients, mode, warmup_rows, cores):
        """The engine's own client threads (--concurrency) on one shared or N independent
        sessions, or N engine processes started together (--wait-for-go)."""
        threads = partitioned_threads(cores, clients) if mode == "independent_partitioned" else self.threads
        if mode == "independent_processes":
            results = self._processes(pairs, clients, warmup_rows)
        elif mode in MODES:
            instances = "shared" if mode == "shared" else "independent"
            args = ["--warmup", str(warmup_rows), "--concurrency", str(clients), "--instances", instances]
            results = [(list(range(len(pairs))), self.run(pairs, *args, threads=threads))]
        else:
            raise ValueError(f"unknown concurrency mode '{mode}' (known: {', '.join(MODES)})")
        scores, latencies = [0.0] * len(pairs), [0.0] * len(pairs)
        for indices, result in results:
            for i, row in zip(indices, result["rows"]):
                scores[i], latencies[i] = row["score"], row["total_ms"]
        engines = sum(r["engines"] for _, r in results)
        return {
            "scores": scores,
            "latencies_ms": latencies,
            "wall_s": max(r["wall_s"] for _, r in results),
            "load_s": max(r["load_ms"] for _, r in results) / 1e3,
            "engines": engines,
            "threads_per_engine": threads,
            "threads_total": threads * engines,
        }

    def _processes(self, pairs, clients: int, warmup_rows: int) -> list[tuple[list[int], dict]]:
        """N engine processes, process k scoring rows k, k+N, ...; all start timing together
        (--wait-for-go), so their wall times overlap."""
        shards = shard(len(pairs), clients)
        with tempfile.TemporaryDirectory() as tmp:
            procs = []
            try:
                for k, rows in enumerate(shards):
                    path, out = Path(tmp) / f"rows{k}.jsonl", Path(tmp) / f"result{k}.json"
                    write_jsonl(
                        [{"id": str(i), "prompt": pairs[i][0], "response": pairs[i][1]} for i in rows], path
                    )
                    cmd = self.command("--input", str(path), "--output", str(out), *self.engine_args())
                    cmd += ["--warmup", str(warmup_rows), "--wait-for-go"]
                    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
                    procs.append(subprocess.Popen(cmd, text=True, **pipes))
                start_together(procs, "engine process")
                results = []
                for k, proc in enumerate(procs):
                    _, err = proc.communicate()
                    if proc.returncode != 0:
                        raise NativeError(
                            f"engine process {k + 1} of {clients} exited {proc.returncode}: {engine_message(err)}"
                        )
                    results.append((shards[k], json.loads((Path(tmp) / f"result{k}.json").read_text())))
                self.last_run = results[0][1]
                return results
            finally:
                stop_all(procs)

    def describe(self) -> dict:
        keys = ("ort_version", "ort_api", "ort_library", "tokenizer", "tokenizer_words", "options")
        return super().describe() | {"binary": str(self.binary)} | {k: self.last_run.get(k) for k in keys}
