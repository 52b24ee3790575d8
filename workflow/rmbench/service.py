"""A scoring service: FastAPI + uvicorn around a runtime (the PyTorch model by default).

Started per launch by the fastapi runtime on a socket it has already bound (127.0.0.1, a free
port), so there is no race for the port:

    python -m rmbench.service --model-dir results/models/deberta --fd 5 --parent-pid 1234

POST /score {"pairs": [{"prompt": ..., "response": ...}, ...]} -> {"scores": [...], "server_ms": t}
GET /health -> {"status": "ok", "runtime": {...}} once the model is loaded.

The server times its own work (server_ms: parse to response, model call included) so the client
can tell transport overhead from scoring. It exits when its parent dies, so an abandoned launch
leaves no server behind.
"""

# No `from __future__ import annotations` here: FastAPI reads the request model's annotation.
import argparse
import contextlib
import os
import signal
import socket
import sys
import threading
import time

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr

MAX_BODY_BYTES = 4 * 1024 * 1024  # an hh-rlhf pair is a few KB; anything near this is a mistake
MAX_PAIRS = 256


class Pair(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: StrictStr
    response: StrictStr


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pairs: list[Pair] = Field(min_length=1, max_length=MAX_PAIRS)


STOPPED = "rmbench service: stopped cleanly"


def create_app(runtime) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        # After a graceful shutdown (SIGTERM included: uvicorn then re-raises the signal, so the
        # exit status is -15 and this line is how a clean stop shows).
        runtime.close()
        print(STOPPED, file=sys.stderr, flush=True)

    app = FastAPI(title="rmbench scoring service", lifespan=lifespan)
    lock = threading.Lock()  # one model, one request at a time: concurrent requests queue

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

    @app.post("/score")
    def score(request: ScoreRequest):
        start = time.perf_counter()
        with lock:
            scores = runtime.score([(p.prompt, p.response) for p in request.pairs])
        return {"scores": scores, "server_ms": (time.perf_counter() - start) * 1e3}

    return app


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
    args = parser.parse_args(argv)

    if args.parent_pid:
        exit_with_parent(args.parent_pid)
    runtime = runtime_class(args.runtime)(args.model_dir, None, args.device, args.threads, args.max_length)
    runtime.load()
    app = create_app(runtime)
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
