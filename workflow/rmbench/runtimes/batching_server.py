"""A serving mode that scales: ONNX Runtime behind the FastAPI service with a micro-batcher.

Concurrent requests that arrive within a small queue delay are scored together, in batches
planned by rmbench.runtimes.batching on token lengths (study.md concluded that concurrency cannot help
and batching does; this joins the two). Options (config `runtimes.batching_server.options`):
strategy (length_aware | token_budget | naive), max_batch, token_budget, queue_delay_ms,
queue_size, request_timeout_s, adaptive (on: keep a planned batch only where the server's own
timings predict it beats the rows alone), and wraps (the runtime inside, ort_python by default).
"""

from __future__ import annotations

from rmbench.runtimes.fastapi_service import FastAPIRuntime
from rmbench.runtimes.ort_python import OrtPythonRuntime

DEFAULTS = {
    "strategy": "length_aware",
    "max_batch": 8,
    "token_budget": 4096,
    "queue_delay_ms": 2.0,
    "queue_size": 256,
    "request_timeout_s": 120.0,
    "adaptive": "off",
}


class BatchingServerRuntime(FastAPIRuntime):
    name = "batching_server"
    studies = ("concurrency", "load")
    wraps = "ort_python"
    needs_onnx = True
    compared_with = ("ort_python", "native")

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        return OrtPythonRuntime.unavailable_reason(device)

    def micro_batching(self) -> dict:
        return DEFAULTS | {k: self.options[k] for k in DEFAULTS if k in self.options}

    def serving_args(self) -> list[str]:
        s = self.micro_batching()
        return [
            "--microbatch",
            s["strategy"],
            "--max-batch",
            str(s["max_batch"]),
            "--token-budget",
            str(s["token_budget"]),
            "--queue-delay-ms",
            str(s["queue_delay_ms"]),
            "--queue-size",
            str(s["queue_size"]),
            "--request-timeout-s",
            str(s["request_timeout_s"]),
            "--adaptive",
            str(s["adaptive"]),
        ]

    def describe(self) -> dict:
        return super().describe() | {"micro_batching": self.micro_batching()}
