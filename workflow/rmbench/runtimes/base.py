"""The runtime interface: load, score (prompt, response) pairs, close, describe.

A runtime knows how to load a model and score text; it knows nothing of launches, statistics
or files. Scoring covers the whole region the study times: raw text pair in, float score on
the host out, tokenization included.
"""

from __future__ import annotations

import functools
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from rmbench.export.onnx_files import MATMUL_GROUPS, ONNX_OPTIMIZERS
from rmbench.models.build import CHAT_PADDING_REFUSED, encode, folder_row_limit
from rmbench.models.families import FAMILY_EXPORT
from rmbench.runtimes.batching import PADDING_SIDES, PADDINGS

# The ONNX file a cell of an ONNX runtime loads (rmbench.export.onnx_files.onnx_file, wired by the rules):
# int8 quantizes every MatMul or one group of them; an optimizer picks another export, `family`
# the one each model family declares (rmbench.models.families' engine_export).
ONNX_FILE_SETTINGS = {
    "precision": (("fp32", "int8"), "fp32"),
    "optimizer": ((*ONNX_OPTIMIZERS, FAMILY_EXPORT), "none"),
    "matmuls": (MATMUL_GROUPS, "all"),
}


class Unsupported(Exception):
    """This runtime cannot run this cell (recorded as status 'unsupported', not a failure)."""


class Runtime(ABC):
    """A runtime declares, once, what the config may ask of it; the config checks
    (runtimes.check_runtimes and check_variants), the rules and the tables read it."""

    name: str = ""
    # The scoring studies it may join (the config is refused where another names it).
    studies: tuple[str, ...] = ()
    # Its launches load the exported ONNX file (rules add the file and its parity gate as inputs).
    needs_onnx: bool = False
    uses_torch: bool = True  # False: its launches load transformers without PyTorch (faster start)
    # Its launches run the native engine (rules add the build and the engine's parity gate).
    uses_native_engine: bool = False
    # Its settings a cell may give (as a variant or an option): name -> (allowed values, default).
    # `padding_side` declared: where the model's family pads (rmbench.models.families); left or right
    # overrides it (the batching study runs both on a decoder).
    settings: ClassVar[dict[str, tuple[tuple[str, ...], str]]] = {
        "padding": (PADDINGS, "longest"),
        "padding_side": (PADDING_SIDES, "declared"),
    }
    # A service: the in-process engines the concurrency study compares it with.
    compared_with: tuple[str, ...] = ()

    def __init__(
        self,
        model_dir: Path,
        onnx_path: Path | None,
        device: str,
        threads: int,
        max_length: int,
        options: dict | None = None,
    ):
        self.model_dir = Path(model_dir)
        self.onnx_path = Path(onnx_path) if onnx_path else None
        self.device = device
        self.threads = threads
        self.configured_max_length = max_length  # the study's cut (data.max_length)
        self.options = options or {}  # runtime-specific settings, e.g. the native binary
        # How far score() pads a batch (a batching cell's `padding`; rmbench.runtimes.batching.PADDINGS).
        self.padding = self.choice("padding")
        self.padding_side = self.choice("padding_side")

    @functools.cached_property
    def max_length(self) -> int | None:
        """The most tokens a row keeps: the configured cut for a text pair, the model's context
        for a chat row (models.row_limit), read from the model's files when first asked."""
        return folder_row_limit(self.model_dir, self.configured_max_length)

    def encode(self, pairs: list[tuple[str, str]], tensors: str, pad_to_multiple_of: int | None = None):
        """Rows tokenized as the model's family declares, truncated and padded as this cell says."""
        side = None if self.padding_side == "declared" else self.padding_side
        return encode(self.tokenizer, pairs, tensors, self.max_length, pad_to_multiple_of, self.padding, side)

    def choice(self, key: str) -> str:
        """Setting `key` as the cell gives it (else its declared default), refused with a clear
        error unless one of the values `settings` declares."""
        allowed, default = self.settings[key]
        value = str(self.options.get(key, default))
        if value not in allowed:
            raise ValueError(f"{self.name}: {key} must be one of {', '.join(allowed)}, not {value}")
        return value

    def constructor_args(self, threads: int | None = None) -> dict:
        """What builds another engine like this one (with other intra-op threads if given)."""
        return {
            "model_dir": self.model_dir,
            "onnx_path": self.onnx_path,
            "device": self.device,
            "threads": self.threads if threads is None else threads,
            "max_length": self.max_length,
            "options": self.options,
        }

    def clone(self, threads: int | None = None) -> Runtime:
        """Another engine like this one, not loaded yet."""
        return type(self)(**self.constructor_args(threads))

    @classmethod
    def family_reason(cls, declared: dict, options: dict) -> str | None:
        """Why this runtime cannot score models of family `declared` (rmbench.models.families) with these
        options, or None when it can. Its cells are then recorded as unsupported, untimed."""
        side = options.get("padding_side", "declared")
        if side != "declared" and side not in declared["padding_sides"]:
            return (
                f"{declared['name']} pads on the {' or '.join(declared['padding_sides'])} only: "
                f"padded on the {side} its scores would move"
            )
        if options.get("padding") == "max_length" and declared["input"] == "chat":
            return f"{declared['name']} {CHAT_PADDING_REFUSED}"
        if options.get("optimizer") == "transformers" and declared["ort_optimizer"] is None:
            return (
                f"ONNX Runtime's fused graph is not built for {declared['name']}: its family declares "
                "no optimizer model type (docs/models.md says why)"
            )
        return None

    @classmethod
    def onnx_needed(cls, options: dict) -> bool:
        """Whether a launch with these options loads the exported ONNX file."""
        return cls.needs_onnx

    @classmethod
    def needs_torch(cls, options: dict) -> bool:
        """Whether a launch with these options runs PyTorch (here or in a process it starts)."""
        return cls.uses_torch

    @classmethod
    def native_engine_needed(cls, options: dict) -> bool:
        """Whether a launch with these options runs the native engine (here or in a process it
        starts)."""
        return cls.uses_native_engine

    @classmethod
    @abstractmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        """Why this runtime cannot use `device` on this machine with these options, or None when
        it can."""

    @abstractmethod
    def load(self) -> None: ...

    @abstractmethod
    def score(self, pairs: list[tuple[str, str]]) -> list[float]: ...

    def check_rows(self, pairs: list[tuple[str, str]]) -> None:
        """Raises ModelSourceError naming the rows this runtime would not score exactly (the
        service answers 422 before they reach a batch). Every row passes unless a runtime says so."""

    def time_rows_alone(self, pairs: list[tuple[str, str]], warmup_rows: int) -> dict:
        """The latency scenario: warm-up rows first (untimed), then every row scored alone.

        Timed here, around score(); a runtime that runs in another process (the native engine)
        overrides this so the timing happens where the work does.
        """
        for pair in pairs[:warmup_rows]:
            self.score_row(pair)
        latencies, scores, parts = [], [], {}
        for pair in pairs:
            start = time.perf_counter()
            score, split = self.score_row(pair)
            latencies.append((time.perf_counter() - start) * 1e3)
            scores.append(float(score))
            for part, value in split.items():
                parts.setdefault(part, []).append(value)
        return {"latencies_ms": latencies, "scores": scores} | parts

    def score_row(self, pair: tuple[str, str]) -> tuple[float, dict]:
        """One row scored alone: its score and, where the runtime can tell them apart, the parts
        of its time, per row (tokenize_us: text to token ids; infer_ms: the engine's call)."""
        return self.score([pair])[0], {}

    def time_batches(
        self, pairs: list[tuple[str, str]], batches: list[list[int]], warmup_batches: int
    ) -> dict:
        """The batching scenario: the first batches once untimed, then every batch, each padded to
        its longest row; the wall time covers the whole set, tokenization included. Scores come
        back in the rows' original order."""
        for batch in batches[:warmup_batches]:
            self.score([pairs[i] for i in batch])
        scores: list[float] = [0.0] * len(pairs)
        batch_ms = []
        start = time.perf_counter()
        for batch in batches:
            t = time.perf_counter()
            batch_scores = self.score([pairs[i] for i in batch])
            batch_ms.append((time.perf_counter() - t) * 1e3)
            for i, score in zip(batch, batch_scores):
                scores[i] = float(score)
        return {"scores": scores, "batch_ms": batch_ms, "wall_s": time.perf_counter() - start}

    def time_concurrent(
        self, pairs: list[tuple[str, str]], clients: int, mode: str, warmup_rows: int, cores: int
    ) -> dict:
        """The concurrency scenario: `clients` concurrent clients, one row per request, engines
        shared or independent as `mode` says (see rmbench.studies.concurrency). Per-request latencies,
        scores in row order and the wall time of the whole set."""
        from rmbench.studies.concurrency import run_clients

        return run_clients(self, pairs, clients, mode, warmup_rows, cores)

    def close(self) -> None:
        """Releases what load() took; safe to call more than once."""

    def describe(self) -> dict:
        loaded = {"onnx": str(self.onnx_path)} if self.onnx_path else {}  # which export, on which device
        return {"name": self.name, "device": self.device, "threads": self.threads} | loaded
