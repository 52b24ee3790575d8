"""A scoring service: FastAPI + uvicorn around a runtime (the PyTorch model by default).

Started per launch by the fastapi runtime on a socket it has already bound (127.0.0.1, a free
port), so there is no race for the port:

    python -m rmbench.service --model-dir results/models/deberta --fd 5 --parent-pid 1234

With --microbatch STRATEGY (the batching_server runtime) it is a serving mode that scales: a
batcher thread coalesces the requests that arrive within --queue-delay-ms of each other into
batches planned by rmbench.batching on token lengths (at most --max-batch rows); a full queue
answers 503 and a request waiting longer than --request-timeout-s answers 504. With --adaptive on
it times every batch it runs and splits a planned batch into rows alone where that is predicted
to be faster on this device (rmbench.batching.BatchCostModel).

POST /score {"pairs": [{"prompt": ..., "response": ...}, ...]} -> {"scores": [...], "server_ms": t}
POST /get_reward {"query": ["\n\nHuman: ...\n\nAssistant: ...", ...]} -> {"rewards": [...], "server_ms": t}
    (OpenRLHF's remote reward model protocol: point its --remote_rm_url at http://HOST:PORT/get_reward)
GET /health -> {"status": "ok", "runtime": {...}} once the model is loaded.

Run it by hand with any runtime, e.g.

    python -m rmbench.service --runtime ort_python --model-dir results/models/deberta --port 5000

A bad body answers 4xx; with more than --queue-size requests waiting, 503.

The server times its own work (server_ms: parse to response, model call included) so the client
can tell transport overhead from scoring. It exits when its parent dies, so an abandoned launch
leaves no server behind.
"""

# No `from __future__ import annotations` here: FastAPI reads the request model's annotation.
import argparse
import contextlib
import os
import queue
import signal
import socket
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from .data import split_dialogue

MAX_BODY_BYTES = 4 * 1024 * 1024  # an hh-rlhf pair is a few KB; anything near this is a mistake
MAX_PAIRS = 256


class Pair(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: StrictStr
    response: StrictStr


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pairs: list[Pair] = Field(min_length=1, max_length=MAX_PAIRS)


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward model call: each query a whole dialogue in hh-rlhf form, prompt
    and response together; `prompts`, where sent, the prompt part of each. Other fields its
    newer clients send (e.g. labels) are ignored."""

    model_config = ConfigDict(extra="ignore")
    query: list[StrictStr] = Field(min_length=1, max_length=MAX_PAIRS)
    prompts: list[StrictStr] | None = None

    def pairs(self) -> list[tuple[str, str]]:
        """(prompt, response) per query: after its prompt where one is sent and begins it, else
        split at its last '\n\nAssistant:' as the data is (rmbench.data.split_dialogue)."""
        if self.prompts is not None and len(self.prompts) != len(self.query):
            raise ValueError(f"{len(self.prompts)} prompts for {len(self.query)} queries")
        pairs = []
        for i, query in enumerate(self.query):
            prompt = self.prompts[i] if self.prompts is not None else None
            if prompt and query.startswith(prompt):
                pairs.append((prompt, query[len(prompt) :].strip()))
                continue
            try:
                pairs.append(split_dialogue(query))
            except ValueError as e:
                raise ValueError(f"query {i}: {e} (send hh-rlhf text, or its prompt in 'prompts')") from None
        return pairs


STOPPED = "rmbench service: stopped cleanly"
# What the adaptive micro-batcher times at start, alone and in batches (100-200 tokens).
CALIBRATION_PAIR = (
    "How should I prepare for a job interview? " * 4,
    "Research the company, practise answers to common questions and prepare questions of your own. " * 4,
)


class QueueFull(Exception):
    pass


class MicroBatcher:
    """Scores concurrent requests together: waits up to `delay_s` after the first queued request
    for more (at most `max_batch` rows), plans batches over the rows it has by token length (kept
    only where `cost_model` predicts they pay, when given), and answers each request with its
    own scores."""

    def __init__(
        self,
        runtime,
        count_tokens,
        strategy: str,
        max_batch: int,
        token_budget: int,
        delay_s: float,
        queue_size: int,
        cost_model=None,
    ):
        from .batching import make_batches

        self.runtime, self.count_tokens, self.make_batches = runtime, count_tokens, make_batches
        self.strategy, self.max_batch, self.token_budget, self.delay_s = (
            strategy,
            max_batch,
            token_budget,
            delay_s,
        )
        self.cost_model = cost_model
        self.queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self.stats = {"rounds": 0, "batches": 0, "rows": 0, "batched_rows": 0, "requests_expired": 0}

    def start(self) -> "MicroBatcher":
        threading.Thread(target=self._serve, name="micro-batcher", daemon=True).start()
        return self

    def submit(self, pairs: list[tuple[str, str]]) -> Future:
        future: Future = Future()
        try:
            self.queue.put_nowait((pairs, future))
        except queue.Full:
            raise QueueFull(f"queue full ({self.queue.maxsize} requests waiting)") from None
        return future

    def _collect(self) -> list:
        items = [self.queue.get()]
        rows, deadline = len(items[0][0]), time.perf_counter() + self.delay_s
        while rows < self.max_batch:
            try:
                items.append(self.queue.get(timeout=max(0.0, deadline - time.perf_counter())))
            except queue.Empty:
                break
            rows += len(items[-1][0])
        # A request whose client gave up (timeout) is dropped, not scored.
        live = [item for item in items if item[1].set_running_or_notify_cancel()]
        self.stats["requests_expired"] += len(items) - len(live)
        return live

    def _serve(self) -> None:
        while True:
            items = self._collect()
            rows = [(k, pair) for k, (pairs, _) in enumerate(items) for pair in pairs]
            if not rows:
                continue
            try:
                lengths = self.count_tokens([pair for _, pair in rows])
                batches = self.make_batches(lengths, self.strategy, self.max_batch, self.token_budget)
                if self.cost_model is not None:
                    batches = self.cost_model.plan(lengths, batches)
                scores = [0.0] * len(rows)
                for batch in batches:
                    start = time.perf_counter()
                    for i, score in zip(batch, self.runtime.score([rows[i][1] for i in batch])):
                        scores[i] = float(score)
                    if self.cost_model is not None:
                        padded = len(batch) * max(lengths[i] for i in batch)
                        self.cost_model.observe(len(batch), padded, (time.perf_counter() - start) * 1e3)
            except Exception as e:  # noqa: BLE001  (each waiting request answers with it)
                for _, future in items:
                    future.set_exception(e)
                continue
            self.stats["rounds"] += 1
            self.stats["batches"] += len(batches)
            self.stats["rows"] += len(rows)
            self.stats["batched_rows"] += sum(len(b) for b in batches if len(b) > 1)
            answers: list[list[float]] = [[] for _ in items]
            for (k, _), score in zip(rows, scores):
                answers[k].append(score)
            for (_, future), answer in zip(items, answers):
                future.set_result(answer)


def create_app(
    runtime, batcher: MicroBatcher | None = None, request_timeout_s: float = 60.0, queue_size: int = 256
) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        # After a graceful shutdown (SIGTERM included: uvicorn then re-raises the signal, so the
        # exit status is -15 and this line is how a clean stop shows).
        runtime.close()
        print(STOPPED, file=sys.stderr, flush=True)

    app = FastAPI(title="rmbench scoring service", lifespan=lifespan)
    lock = threading.Lock()  # one model, one request at a time: concurrent requests queue
    waiting = threading.BoundedSemaphore(queue_size)  # ... up to queue_size of them, then 503

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return JSONResponse({"detail": f"body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        return await call_next(request)

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception):
        # The message reaches the client, which classifies it (e.g. out of memory).
        return JSONResponse({"detail": f"{type(error).__name__}: {error}"[:1000]}, status_code=500)

    @app.get("/health")
    def health():
        return {"status": "ok", "runtime": runtime.describe(), "pid": os.getpid()}

    @app.get("/stats")
    def stats():
        return batcher.stats if batcher else {}

    def score_pairs(pairs: list[tuple[str, str]]):
        """The pairs' scores, or the 503 / 504 answer when the queue is full or too slow."""
        if batcher is None:
            if not waiting.acquire(blocking=False):
                return JSONResponse(
                    {"detail": f"queue full ({queue_size} requests waiting)"}, status_code=503
                )
            try:
                with lock:
                    return runtime.score(pairs)
            finally:
                waiting.release()
        try:
            future = batcher.submit(pairs)
        except QueueFull as e:
            return JSONResponse({"detail": str(e)}, status_code=503)
        try:
            return future.result(timeout=request_timeout_s)
        except TimeoutError:
            future.cancel()
            return JSONResponse({"detail": f"not scored within {request_timeout_s:g} s"}, status_code=504)

    @app.post("/score")
    def score(request: ScoreRequest):
        start = time.perf_counter()
        scores = score_pairs([(p.prompt, p.response) for p in request.pairs])
        if isinstance(scores, JSONResponse):
            return scores
        return {"scores": scores, "server_ms": (time.perf_counter() - start) * 1e3}

    @app.post("/get_reward")
    def get_reward(request: RewardRequest):
        start = time.perf_counter()
        try:
            pairs = request.pairs()
        except ValueError as e:
            return JSONResponse({"detail": str(e)}, status_code=422)
        rewards = score_pairs(pairs)
        if isinstance(rewards, JSONResponse):
            return rewards
        return {"rewards": [float(r) for r in rewards], "server_ms": (time.perf_counter() - start) * 1e3}

    return app


def default_onnx(model_dir) -> str:
    """The pipeline's export of a model folder: results/models/<name> -> results/onnx/<name>/model.onnx."""
    model_dir = Path(model_dir)
    return str(model_dir.parent.parent / "onnx" / model_dir.name / "model.onnx")


def exit_with_parent(parent_pid: int, interval_s: float = 1.0) -> None:
    """Stops this server (SIGTERM to itself: uvicorn shuts down cleanly) once its parent is gone."""

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


def main(argv=None) -> None:
    import uvicorn

    from .runtimes import runtime_class

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--runtime", default="hf_eager", help="the runtime the service wraps")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--fd", type=int, help="an already bound, listening socket")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    parser.add_argument(
        "--onnx", help="the ONNX file (runtimes that need one; default: the pipeline's export of the model)"
    )
    parser.add_argument("--binary", default="results/native/bin/rmscore", help="the native engine")
    parser.add_argument("--microbatch", choices=["naive", "length_aware", "token_budget"])
    parser.add_argument("--max-batch", type=int, default=8, help="rows per batch at most")
    parser.add_argument("--token-budget", type=int, default=4096, help="token_budget: rows x longest")
    parser.add_argument("--queue-delay-ms", type=float, default=2.0, help="wait for more requests")
    parser.add_argument("--queue-size", type=int, default=256, help="requests waiting, at most")
    parser.add_argument("--request-timeout-s", type=float, default=60.0)
    parser.add_argument(
        "--adaptive", choices=["on", "off"], default="off", help="keep a batch only where it pays"
    )
    args = parser.parse_args(argv)

    if args.parent_pid:
        exit_with_parent(args.parent_pid)
    cls = runtime_class(args.runtime)
    options = {"binary": args.binary} if args.runtime == "native" else {}
    onnx = args.onnx or (default_onnx(args.model_dir) if cls.onnx_needed(options) else None)
    for what, path in (
        ("model", args.model_dir),
        ("ONNX file", onnx),
        ("native engine", options.get("binary")),
    ):
        if path and not Path(path).exists():
            parser.error(f"no {what} at {path}: build it first, e.g. `snakemake --cores 1 {path}`")
    runtime = cls(args.model_dir, onnx, args.device, args.threads, args.max_length, options)
    runtime.load()
    batcher = None
    if args.microbatch:
        from .batching import BatchCostModel
        from .models import encode, load_tokenizer

        tokenizer = load_tokenizer(args.model_dir)

        def count_tokens(pairs):
            encoded = encode(tokenizer, pairs, None, args.max_length, padding="do_not_pad")
            return [len(ids) for ids in encoded["input_ids"]]

        cost_model = None
        if args.adaptive == "on":  # measured before the first request (the service is not up yet)
            cost_model = BatchCostModel()
            pair = CALIBRATION_PAIR
            sizes = sorted({size for size in (2, 4, 8) if size < args.max_batch} | {args.max_batch} - {1})
            cost_model.calibrate(runtime.score, pair, count_tokens([pair])[0], sizes)
        batcher = MicroBatcher(
            runtime,
            count_tokens,
            args.microbatch,
            args.max_batch,
            args.token_budget,
            args.queue_delay_ms / 1e3,
            args.queue_size,
            cost_model,
        ).start()
    app = create_app(runtime, batcher, args.request_timeout_s, args.queue_size)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    if args.fd is not None:
        # socket(fileno=) reads the family (AF_INET) from the descriptor; uvicorn's own fd= option
        # takes it for a Unix socket, so asyncio leaves Nagle on and every reply waits ~40 ms.
        server.run(sockets=[socket.socket(fileno=args.fd)])
    else:
        server.run()


if __name__ == "__main__":
    main()
