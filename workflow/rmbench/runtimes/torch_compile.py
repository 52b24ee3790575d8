"""HF transformers under torch.compile (Inductor): eager's model, compiled on the first call.

Options (from the config's runtime options or the cell's parameters):
- mode: torch.compile mode (default | reduce-overhead | max-autotune ...), default "default";
- dynamic: none | true | false, torch.compile's `dynamic` (none lets Dynamo mark a dimension
  dynamic after the first shape change; false recompiles for every new length);
- bucket: pad every input up to a multiple of this many tokens (0 = no padding), so that fewer
  distinct lengths reach the compiler;
- freezing: on | off (default off), Inductor's freezing: weights become constants, so
  computations that depend only on them (DeBERTa's relative-position projections) are folded;
- prepack: on | off (default on; off only with freezing on): with frozen weights Inductor also
  repacks each linear layer's weight for a packed kernel (oneDNN's, or MKL's at a fixed batch);
  off keeps eager's BLAS products, so that folding and the kernel swap are timed apart;
- precision: fp32 | bf16, and head: same | fp32, as for HF eager (autocast around the compiled
  call; the head's layers outside it);
- cache: warm | cold. warm keeps Inductor's on-disk cache in `cache_root` across launches; cold
  gives each launch an empty one. Each launch records whether the cache it found held entries,
  and its graphs' cache hits, misses and bypasses: Inductor caches no graph that holds prepacked
  weights (oneDNN's or MKL's), so a frozen compile with prepacking compiles in full even on a warm cache.

Every call is checked for a compilation (Dynamo's frame counter), so a launch reports the first
call's compile time, recompiles, graph breaks and the latency of rows that hit a shape-cache miss.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from rmbench.runtimes.hf_eager import HFEagerRuntime

DYNAMIC = {"none": None, "true": True, "false": False}


class TorchCompileRuntime(HFEagerRuntime):
    name = "torch_compile"
    studies = ("latency", "compile", "batching", "concurrency", "decomposition", "colocation")
    settings = HFEagerRuntime.settings | {
        "kernels": (("default",), "default"),  # Inductor picks its own kernels
        "cache": (("warm", "cold"), "warm"),
        "freezing": (("on", "off"), "off"),
        "prepack": (("on", "off"), "on"),
    }

    def load(self) -> None:
        self.dynamic = str(self.options.get("dynamic", "none")).lower()
        if self.dynamic not in DYNAMIC:
            raise ValueError(
                f"torch_compile: dynamic must be one of {', '.join(DYNAMIC)}, not {self.dynamic}"
            )
        self.mode = self.options.get("mode", "default")
        self.bucket = int(self.options.get("bucket", 0))
        self.cache = self.choice("cache")
        self.freezing = self.choice("freezing")
        self.prepack = self.choice("prepack")
        if self.prepack == "off" and self.freezing != "on":
            raise ValueError(f"{self.name}: prepack off changes what freezing does; give it with freezing on")
        super().load()
        import torch._inductor.config

        torch._inductor.config.freezing = self.freezing == "on"
        if self.freezing == "on":
            # Read once per process, at its first frozen compile: a launch is a fresh process.
            torch._inductor.config.cpp.weight_prepack = self.prepack == "on"
        self.cache_dir = self._cache_dir()
        self.cache_warm = self.cache_dir.is_dir() and any(self.cache_dir.iterdir())
        # Inductor reads the variable when it first needs its cache: at the first compiled call.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(self.cache_dir)
        self.torch._dynamo.reset()  # counts start at zero (a launch is its own process anyway)
        self._counters().clear()
        self.compiled = self.torch.compile(self.model, mode=self.mode, dynamic=DYNAMIC[self.dynamic])
        self.row_compiled: list[bool] = []
        self.first_call_s: float | None = None

    def _cache_dir(self) -> Path:
        if self.cache == "cold":
            self._cold = tempfile.TemporaryDirectory(prefix="inductor-cold-")
            return Path(self._cold.name)
        root = Path(self.options.get("cache_root") or Path(tempfile.gettempdir()) / "rmbench-inductor")
        # One folder per torch version and setting: entries of another never count as warm.
        setting = f"{self.mode}-dynamic-{self.dynamic}-bucket-{self.bucket}"
        if self.freezing == "on" or self.precision != "fp32":
            setting += f"-freezing-{self.freezing}-{self.precision}"
        if self.prepack == "off":
            setting += "-prepack-off"
        if self.head != "same":
            setting += f"-head-{self.head}"
        return root / f"torch-{self.torch.__version__}" / setting

    @staticmethod
    def _counters():
        from torch._dynamo.utils import counters

        return counters

    def score(self, pairs):
        enc = self.encode(pairs, "pt", self.bucket or None).to(self.device)
        frames = self._counters()["frames"]["total"]
        start = time.perf_counter()
        with self.torch.inference_mode(), self.autocast():
            scores = self.compiled(**enc).logits[:, 0].float().cpu().tolist()
        if self.first_call_s is None:
            self.first_call_s = time.perf_counter() - start
        self.row_compiled.append(self._counters()["frames"]["total"] > frames)
        return scores

    def compile_metrics(self) -> dict:
        """What compiling cost this launch so far: the first call, compiles, graph breaks, and
        whether Inductor's cache held the kernels."""
        counters = self._counters()
        return {
            "first_call_s": self.first_call_s,
            "compiles": counters["frames"]["total"],
            "recompiles": max(counters["frames"]["total"] - 1, 0),
            "graph_breaks": sum(counters["graph_break"].values()),
            "fxgraph_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
            "fxgraph_cache_misses": counters["inductor"]["fxgraph_cache_miss"],
            "fxgraph_cache_bypasses": counters["inductor"]["fxgraph_cache_bypass"],
            "cache_warm": int(self.cache_warm),
        }

    def time_rows_alone(self, pairs, warmup_rows):
        measured = super().time_rows_alone(pairs, warmup_rows)
        compiled = self.row_compiled[-len(pairs) :]  # the timed rows (warm-up rows come first)
        misses = [ms for ms, c in zip(measured["latencies_ms"], compiled) if c]
        steady = [ms for ms, c in zip(measured["latencies_ms"], compiled) if not c]
        return (
            measured
            | self.compile_metrics()
            | {
                "miss_rows": len(misses),
                "miss_max_ms": max(misses) if misses else 0.0,
                "steady_p50_ms": float(np.median(steady)) if steady else float("nan"),
                "row_compiled": [int(c) for c in compiled],
            }
        )

    def time_batches(self, pairs, batches, warmup_batches):
        """As every runtime batches, plus which timed batches compiled: a new shape after the
        warm-up batches puts a compile inside the wall time (dynamic=true avoids most)."""
        measured = super().time_batches(pairs, batches, warmup_batches)
        compiled = self.row_compiled[-len(batches) :]  # one call per batch; warm-up calls first
        return (
            measured
            | self.compile_metrics()
            | {
                "timed_compiles": int(sum(compiled)),
                "batch_compiled": [int(c) for c in compiled],
            }
        )

    def close(self) -> None:
        cold = getattr(self, "_cold", None)
        if cold is not None:
            cold.cleanup()

    def describe(self) -> dict:
        return super().describe() | {
            "mode": self.mode,
            "dynamic": self.dynamic,
            "bucket": self.bucket,
            "cache": self.cache,
            "freezing": self.freezing,
            "prepack": self.prepack,
            "cache_dir": str(self.cache_dir),
            "cache_warm": self.cache_warm,
        }
