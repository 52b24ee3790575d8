"""A FastAPI + uvicorn service around the PyTorch model, called over HTTP on loopback.

Each launch starts its own server process (rmbench.service.app) on a socket bound here to
127.0.0.1 and a free port, waits for /health, times round trips with a keep-alive httpx client,
and stops the server afterwards, also when the launch fails. The server reports its own time per
request, so transport overhead is measured apart from scoring.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from rmbench.runtimes.base import Runtime, Unsupported

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # workflow/, where rmbench lives
STARTUP_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 15.0


class ServiceError(RuntimeError):
    """The service failed to start or answered with an error (its message included)."""


class FastAPIRuntime(Runtime):
    name = "fastapi"
    studies = ("latency", "concurrency", "load")
    wraps = "hf_eager"  # the runtime the service scores with (option `wraps` overrides it)
    compared_with = ("hf_eager",)
    # The endpoint a launch calls: /score with (prompt, response) pairs, or OpenRLHF's
    # /get_reward with each pair as one hh-rlhf dialogue, which the server splits again.
    # The load study's body shape (rmbench.studies.load.BODIES): hh-rlhf text, OpenRLHF's templated
    # query, or verl's /classify text; the templated ones need a chat family.
    settings = Runtime.settings | {
        "endpoint": (("score", "get_reward"), "score"),
        "body": (("hh", "openrlhf", "verl"), "hh"),
    }

    @classmethod
    def needs_torch(cls, options: dict) -> bool:
        from rmbench.runtimes import runtime_class  # the registry imports this module

        return runtime_class(options.get("wraps", cls.wraps)).needs_torch({})

    @classmethod
    def onnx_needed(cls, options: dict) -> bool:
        from rmbench.runtimes import runtime_class

        return runtime_class(options.get("wraps", cls.wraps)).onnx_needed({})

    @classmethod
    def native_engine_needed(cls, options: dict) -> bool:
        from rmbench.runtimes import runtime_class

        return runtime_class(options.get("wraps", cls.wraps)).native_engine_needed({})

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        from rmbench.runtimes import runtime_class

        return runtime_class((options or {}).get("wraps", cls.wraps)).unavailable_reason(device)

    @classmethod
    def family_reason(cls, declared: dict, options: dict) -> str | None:
        from rmbench.runtimes import runtime_class

        inner = options.get("wraps", cls.wraps)
        if reason := runtime_class(inner).family_reason(declared, {}):
            return f"the service wraps {inner}: {reason}"
        body = options.get("body", "hh")
        if body != "hh" and declared["input"] != "chat":
            return f"{declared['name']} has no chat template: {body}'s bodies are templated with it"
        return None

    def load(self) -> None:
        import httpx

        self.server_ms: list[float] = []
        self.endpoint = self.choice("endpoint")
        self.killed = False  # True when the server ignored SIGTERM and had to be killed
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.options.get("host", "127.0.0.1"), 0))
        listener.listen(128)
        self.host, self.port = listener.getsockname()
        command = [
            sys.executable,
            "-m",
            "rmbench.service.app",
            *self.server_args(),
            "--fd",
            str(listener.fileno()),
            "--parent-pid",
            str(os.getpid()),
        ]
        env = os.environ | {
            "PYTHONPATH": os.pathsep.join([str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")])
        }
        # Its own process group, so stopping it stops anything it started too. Its output goes to
        # the launch's log unless a `server_log` file is given.
        log = open(self.options["server_log"], "w") if self.options.get("server_log") else None  # noqa: SIM115
        self.server = subprocess.Popen(
            command, pass_fds=[listener.fileno()], env=env, start_new_session=True, stdout=log, stderr=log
        )
        if log is not None:
            log.close()  # the server holds its own copy
        listener.close()  # the server holds its own copy
        # No Nagle: the request's header and body writes must not wait for a delayed ACK (~40 ms).
        transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        self.client = httpx.Client(
            base_url=f"http://{self.host}:{self.port}", timeout=None, transport=transport
        )
        self.health = self._wait_until_healthy()

    def server_args(self) -> list[str]:
        """The service's command-line options: the runtime it wraps and its settings."""
        args = ["--model-dir", str(self.model_dir), "--runtime", self.options.get("wraps", self.wraps)]
        args += [
            "--device",
            self.device,
            "--threads",
            str(self.threads),
            "--max-length",  # the configured cut: the service finds its model's limit itself
            str(self.configured_max_length),
        ]
        if self.onnx_path:
            args += ["--onnx", str(self.onnx_path)]
        return args + self.serving_args()

    def serving_args(self) -> list[str]:
        """One request at a time: the paper's service (the batching_server runtime batches)."""
        return ["--microbatch", "off"]

    def _wait_until_healthy(self) -> dict:
        import httpx

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise ServiceError(f"service exited with code {self.server.returncode} before it was healthy")
            try:
                response = self.client.get("/health", timeout=1.0)
                if response.status_code == 200:
                    return response.json()
            except httpx.TransportError:
                pass  # not listening yet: the model is still loading
            time.sleep(0.2)
        raise ServiceError(f"service not healthy after {STARTUP_TIMEOUT_S:g} s")

    @staticmethod
    def dialogue(prompt: str, response: str) -> str:
        """A pair as one dialogue, as OpenRLHF sends it to /get_reward (the server splits it)."""
        from rmbench.studies.load import hh_query

        return hh_query(prompt, response)

    def server_stats(self) -> dict:
        """The service's own counters (/stats), named server_<counter> in the launch's record."""
        return {f"server_{k}": v for k, v in self.client.get("/stats").json().items()}

    def score(self, pairs):
        if self.endpoint == "get_reward":  # as OpenRLHF's remote reward model client calls it
            body = {"query": [self.dialogue(p, r) for p, r in pairs]}
        else:
            body = {"pairs": [{"prompt": p, "response": r} for p, r in pairs]}
        response = self.client.post(f"/{self.endpoint}", json=body)
        if response.status_code != 200:
            raise ServiceError(f"service answered {response.status_code}: {response.text[:500]}")
        data = response.json()
        self.server_ms.append(data["server_ms"])
        return data["rewards" if self.endpoint == "get_reward" else "scores"]

    def time_rows_alone(self, pairs, warmup_rows):
        measured = super().time_rows_alone(pairs, warmup_rows)
        server = self.server_ms[-len(pairs) :]
        overhead = [c - s for c, s in zip(measured["latencies_ms"], server)]
        return measured | {
            "server_ms": server,
            "overhead_ms": overhead,
            "server_p50_ms": float(np.median(server)),
            "overhead_p50_ms": float(np.median(overhead)),
        }

    def time_concurrent(self, pairs, clients, mode, warmup_rows, cores):
        """N concurrent HTTP clients against this one service (the only mode a service has)."""
        from rmbench.studies.concurrency import run_threads

        if mode != "shared":
            raise Unsupported(
                f"{self.name} is one service that every client shares; mode '{mode}' does not apply"
            )
        measured = run_threads([self] * clients, pairs, warmup_rows)
        engines = {"engines": 1, "threads_per_engine": self.threads, "threads_total": self.threads}
        return measured | engines | self.server_stats()

    def time_load(self, pairs, clients: int, requests: int, malformed_share: float) -> dict:
        """A trainer's load (rmbench.studies.load): `clients` OpenRLHF-style clients send `requests`
        one-sample POSTs of the cell's body shape, a share of them malformed. Each row's score
        is its first reward (a row no request got a reward for is scored directly);
        `reward_spread` is the largest gap between one row's rewards."""
        from rmbench.studies.load import BODIES, run_load, trainer_samples

        shape = BODIES[self.choice("body")]
        samples = trainer_samples(shape, self.model_dir, pairs)
        url = f"http://{self.host}:{self.port}{shape.path}"
        result = run_load(url, samples, clients, requests, malformed_share, shape=shape)
        per_row: list[list[float]] = [[] for _ in pairs]
        for i, reward in enumerate(result.pop("rewards")):
            if reward is not None:
                per_row[i % len(pairs)].append(reward)
        scores = [rewards[0] if rewards else self.score([pair])[0] for rewards, pair in zip(per_row, pairs)]
        spread = max((max(r) - min(r) for r in per_row if r), default=0.0)
        row_ms = result["wall_s"] * 1e3 / result["reward"] if result["reward"] else float("nan")
        return result | {"scores": scores, "reward_spread": spread, "row_ms": row_ms} | self.server_stats()

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        server = getattr(self, "server", None)
        if server is None or server.poll() is not None:
            return
        os.killpg(server.pid, signal.SIGTERM)  # uvicorn finishes in-flight requests, then exits
        try:
            server.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            self.killed = True

    def describe(self) -> dict:
        return super().describe() | {
            "server_pid": self.server.pid,
            "port": self.port,
            "server_runtime": self.health.get("runtime"),
            "endpoint": self.endpoint,
        }
