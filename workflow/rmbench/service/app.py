"""A scoring service: FastAPI + uvicorn around a runtime (the PyTorch model by default).

Run it by hand with any runtime, e.g.

    rmbench-serve --runtime ort_python --model-dir results/models/deberta --port 5000

POST /score and POST /get_reward (OpenRLHF's remote reward protocol: point its --remote_rm_url at
http://HOST:PORT/get_reward) take the bodies rmbench.service.protocol declares. GET /health answers once
the model is loaded, with the runtime, the queue and the micro-batcher's counts.

By default a micro-batcher scores concurrent requests together (--microbatch length_aware): a
trainer sends one sample per POST, so batching happens here or nowhere. It waits up to
--queue-delay-ms for more requests, plans batches on token lengths (at most --max-batch rows),
and with --adaptive on (the default) keeps a planned batch only where its own timings predict it
beats the rows alone on this device (rmbench.runtimes.batching.BatchCostModel). --microbatch off scores one
request at a time, as the latency study's fastapi runtime does.

Every bad body is a 4xx naming the field: 422 for invalid JSON, wrong types, lone surrogates,
empty or over-long lists (--max-pairs) and a query without an assistant turn; 413 for a body over
--max-body-mb, counted as it streams in. Beyond --queue-size admitted requests it answers 503
with Retry-After; a request not scored within --request-timeout-s answers 504. Off loopback it
needs an API key (--api-key or $RMBENCH_API_KEY): a bearer token, or ?key= in the URL.

The server times its own work (server_ms: parse to response, model call included) so the client
can tell transport overhead from scoring. A launch starts it on a socket it has already bound
(--fd, so there is no race for the port) and --parent-pid: it exits when its launch dies.
"""

# No `from __future__ import annotations` here: FastAPI reads the endpoints' annotations, and
# their request models are local to create_app.
import argparse
import asyncio
import contextlib
import hmac
import ipaddress
import json
import math
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from rmbench.errors import ModelSourceError
from rmbench.runtimes.batching import MicroBatcher, QueueFull
from rmbench.service.protocol import pooling_answer, request_models, reward_answer, sigmoid
from rmbench.service.rendered import RenderedText

API_KEY_VARIABLE = "RMBENCH_API_KEY"


@dataclass(frozen=True)
class Limits:
    """What the service admits: requests waiting or scored at once, how long one may wait, rows
    per request and body bytes (an hh-rlhf pair is a few KB; anything near 4 MiB is a mistake)."""

    queue_size: int = 256
    request_timeout_s: float = 60.0
    max_pairs: int = 256
    max_body_bytes: int = 4 * 1024 * 1024


STOPPED = "rmbench service: stopped cleanly"
# What the adaptive micro-batcher times at start, alone and in batches (100-200 tokens).
CALIBRATION_PAIR = (
    "How should I prepare for a job interview? " * 4,
    "Research the company, practise answers to common questions and prepare questions of your own. " * 4,
)


class AsciiJSONResponse(JSONResponse):
    """JSON escaped to ASCII: an answer that quotes a client's lone surrogate (a field name, say)
    still encodes, where FastAPI's UTF-8 JSON would fail with a 500."""

    def render(self, content) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


class Admission:
    """Requests admitted at once (waiting or being scored), at most `limit`, and a moving average
    of how long an admitted request takes: what a refused client is told to wait (Retry-After)."""

    def __init__(self, limit: int, alpha: float = 0.2):
        self.limit, self.alpha = limit, alpha
        self.count = 0
        self.seconds: float | None = None
        self.lock = threading.Lock()

    def enter(self) -> bool:
        with self.lock:
            if self.count >= self.limit:
                return False
            self.count += 1
            return True

    def leave(self, seconds: float | None) -> None:
        """One admitted request done, after `seconds` (None: refused after all, not timed)."""
        with self.lock:
            self.count -= 1
            if seconds is not None:
                known = self.seconds
                self.seconds = seconds if known is None else known + self.alpha * (seconds - known)

    def retry_after_s(self) -> int:
        return max(1, math.ceil(self.seconds or 0.0))

    def describe(self) -> dict:
        return {"admitted": self.count, "limit": self.limit, "mean_request_s": self.seconds}


def loopback_only(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def create_app(
    runtime,
    batcher: MicroBatcher | None = None,
    limits: Limits = Limits(),
    api_key: str | None = None,
    rendered: RenderedText | None = None,
) -> FastAPI:
    """The service around a loaded runtime. `rendered`: what marks a text the model's template
    rendered (read from the runtime's model folder unless given)."""
    from rmbench.models.build import encode, load_tokenizer

    tokenizer = load_tokenizer(runtime.model_dir)  # the texts' rules, and the tokens /classify counts
    rendered = rendered or RenderedText.of(tokenizer)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        # After a graceful shutdown (SIGTERM included: uvicorn then re-raises the signal, so the
        # exit status is -15 and this line is how a clean stop shows).
        runtime.close()
        print(STOPPED, file=sys.stderr, flush=True)

    # max_body_size counts the bytes as they stream in (chunked bodies too): 413 once it passes.
    app = FastAPI(
        title="rmbench scoring service",
        lifespan=lifespan,
        max_body_size=limits.max_body_bytes,
        default_response_class=AsciiJSONResponse,
    )
    ScoreRequest, RewardRequest, ClassifyRequest, EmbeddingsRequest = request_models(limits.max_pairs)
    admission = Admission(limits.queue_size)
    engine = asyncio.Lock()  # one model, one request at a time: admitted requests wait their turn

    if api_key:
        expected = api_key.encode()

        @app.middleware("http")
        async def require_key(request: Request, call_next):
            # a bearer token, or `?key=` in the URL: OpenRLHF's client sends no headers of its own,
            # but posts to whatever --remote_rm_url says
            header = request.headers.get("authorization", "")
            given = (
                header.removeprefix("Bearer ")
                if header.startswith("Bearer ")
                else request.query_params.get("key", "")
            )
            if not hmac.compare_digest(given.encode(), expected):
                return AsciiJSONResponse(
                    {
                        "detail": "missing or wrong API key: send 'Authorization: Bearer <key>', or ?key=<key> in the URL"
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        # Where and what, not the input itself: it may be megabytes, or not encodable at all.
        fields = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in error.errors()]
        return AsciiJSONResponse({"detail": fields}, status_code=422)

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception):
        # The message reaches the client, which classifies it (e.g. out of memory).
        return AsciiJSONResponse({"detail": f"{type(error).__name__}: {error}"[:1000]}, status_code=500)

    @app.get("/health")
    def health():
        return {
            "status": "ok",
            "runtime": runtime.describe(),
            "pid": os.getpid(),
            "queue": admission.describe(),
            "batching": batcher.stats if batcher else None,
        }

    @app.get("/stats")
    def stats():
        return batcher.stats if batcher else {}

    def overloaded(detail: str) -> AsciiJSONResponse:
        return AsciiJSONResponse(
            {"detail": detail}, status_code=503, headers={"Retry-After": str(admission.retry_after_s())}
        )

    def too_slow() -> AsciiJSONResponse:
        return AsciiJSONResponse(
            {"detail": f"not scored within {limits.request_timeout_s:g} s"}, status_code=504
        )

    async def score_pairs(pairs: list):
        """The rows' scores (pairs, or texts rendered already), or the 422 / 503 / 504 answer when
        a row cannot be scored exactly or the service is full or too slow."""
        try:
            runtime.check_rows(pairs)
        except ModelSourceError as e:
            return AsciiJSONResponse({"detail": str(e)}, status_code=422)
        if not admission.enter():
            return overloaded(f"queue full ({limits.queue_size} requests waiting)")
        started = time.perf_counter()
        try:
            if batcher is not None:
                try:
                    future = batcher.submit(pairs)
                except QueueFull as e:
                    started = None
                    return overloaded(str(e))
                try:  # a cancelled wait cancels the future: the batcher drops it unscored
                    return await asyncio.wait_for(asyncio.wrap_future(future), limits.request_timeout_s)
                except TimeoutError:
                    return too_slow()
            try:
                await asyncio.wait_for(engine.acquire(), limits.request_timeout_s)
            except TimeoutError:
                return too_slow()
            try:
                return await run_in_threadpool(runtime.score, pairs)
            finally:
                engine.release()
        finally:
            admission.leave(None if started is None else time.perf_counter() - started)

    @app.post("/score")
    async def score(request: ScoreRequest):
        start = time.perf_counter()
        scores = await score_pairs([(p.prompt, p.response) for p in request.pairs])
        if isinstance(scores, AsciiJSONResponse):
            return scores
        return {"scores": scores, "server_ms": (time.perf_counter() - start) * 1e3}

    @app.post("/get_reward")
    async def get_reward(request: RewardRequest):
        start = time.perf_counter()
        try:
            rows, paths = request.rows(rendered)
        except (ValueError, ModelSourceError) as e:  # ModelSourceError: rendered.AmbiguousText
            return AsciiJSONResponse({"detail": str(e)}, status_code=422)
        rewards = await score_pairs(rows)
        if isinstance(rewards, AsciiJSONResponse):
            return rewards
        return reward_answer([float(r) for r in rewards], (time.perf_counter() - start) * 1e3, paths)

    async def pooled(texts: list[str], model: str | None, kind: str, key: str, activate: bool):
        rows = [rendered.as_classified(text) for text in texts]
        scores = await score_pairs(rows)
        if isinstance(scores, AsciiJSONResponse):
            return scores
        values = [sigmoid(float(s)) if activate else float(s) for s in scores]
        tokens = encode(tokenizer, rows, None, runtime.max_length, padding="do_not_pad")["input_ids"]
        return pooling_answer(kind, model or str(runtime.model_dir), values, sum(map(len, tokens)), key)

    @app.post("/classify")
    async def classify(request: ClassifyRequest):
        """vLLM's pooling API, as verl's reward loop calls it (reads data[-1].probs[-1])."""
        return await pooled(request.texts(), request.model, "classify", "probs", not request.raw())

    @app.post("/v1/embeddings")
    async def embeddings(request: EmbeddingsRequest):
        """SGLang's reward form (reads data[-1].embedding[-1]): the raw score."""
        return await pooled(request.texts(), request.model, "embd", "embedding", activate=False)

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


def parse_args(argv=None) -> argparse.Namespace:
    defaults = Limits()
    parser = argparse.ArgumentParser(prog="rmbench-serve", description=__doc__.split("\n\n")[0])
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
    parser.add_argument(
        "--microbatch",
        choices=["off", "naive", "length_aware", "token_budget"],
        default="length_aware",
        help="score concurrent requests together (off: one request at a time)",
    )
    parser.add_argument("--max-batch", type=int, default=8, help="rows per batch at most")
    parser.add_argument("--token-budget", type=int, default=4096, help="token_budget: rows x longest")
    parser.add_argument("--queue-delay-ms", type=float, default=2.0, help="wait for more requests")
    parser.add_argument(
        "--adaptive", choices=["on", "off"], default="on", help="keep a batch only where it pays"
    )
    parser.add_argument(
        "--queue-size", type=int, default=defaults.queue_size, help="requests admitted at once"
    )
    parser.add_argument("--request-timeout-s", type=float, default=defaults.request_timeout_s)
    parser.add_argument("--max-pairs", type=int, default=defaults.max_pairs, help="rows per request at most")
    parser.add_argument(
        "--max-body-mb", type=float, default=defaults.max_body_bytes / 2**20, help="request body, at most"
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_VARIABLE),
        help=f"clients send 'Authorization: Bearer KEY' or ?key=KEY (default: ${API_KEY_VARIABLE}; required off loopback)",
    )
    args = parser.parse_args(argv)
    from rmbench.runtimes import runtime_class

    # the runtime's options: the native engine's binary, where the runtime runs the engine
    args.options = {"binary": args.binary} if runtime_class(args.runtime).native_engine_needed({}) else {}
    if not args.onnx and runtime_class(args.runtime).onnx_needed(args.options):
        args.onnx = default_onnx(args.model_dir)
    for what, path in (
        ("model", args.model_dir),
        ("ONNX file", args.onnx),
        ("native engine", args.options.get("binary")),
    ):
        if path and not Path(path).exists():
            parser.error(f"no {what} at {path}: build it first, e.g. `snakemake --cores 1 {path}`")
    if not args.api_key and args.fd is None and not loopback_only(args.host):
        parser.error(
            f"--host {args.host} serves other machines, and there is no API key: set {API_KEY_VARIABLE} "
            "(or --api-key) to a secret; clients send 'Authorization: Bearer <key>' or ?key=<key> in the URL"
        )
    return args


def start_batcher(args, runtime) -> MicroBatcher:
    """The micro-batcher of `--microbatch`, its cost model calibrated first where `--adaptive on`."""
    from rmbench.models.build import encode, load_tokenizer
    from rmbench.runtimes.batching import BatchCostModel

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
    return MicroBatcher(
        runtime,
        count_tokens,
        args.microbatch,
        args.max_batch,
        args.token_budget,
        args.queue_delay_ms / 1e3,
        args.queue_size,
        cost_model,
    ).start()


def main(argv=None) -> None:
    import uvicorn

    from rmbench.runtimes import runtime_class

    args = parse_args(argv)
    if args.parent_pid:
        exit_with_parent(args.parent_pid)
    runtime = runtime_class(args.runtime)(
        args.model_dir, args.onnx, args.device, args.threads, args.max_length, args.options
    )
    runtime.load()
    batcher = start_batcher(args, runtime) if args.microbatch != "off" else None
    limits = Limits(args.queue_size, args.request_timeout_s, args.max_pairs, int(args.max_body_mb * 2**20))
    app = create_app(runtime, batcher, limits, args.api_key)
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
