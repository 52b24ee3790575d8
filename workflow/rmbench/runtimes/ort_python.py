"""ONNX Runtime called from Python: the same ONNX file and library as the native engine."""

from __future__ import annotations

import time

from rmbench.export.onnx import GRAPH_LEVELS, ort_run, ort_session
from rmbench.models.build import load_tokenizer
from rmbench.runtimes.base import ONNX_FILE_SETTINGS, Runtime


class OrtPythonRuntime(Runtime):
    """Options: graph, ONNX Runtime's graph optimization level (disabled | basic | extended | all,
    default all); operators, the native engine's operator library (for an export that calls its
    operators, so that native and Python run the same graph). Reduced precision comes as another
    ONNX file (the cell's onnx input)."""

    name = "ort_python"
    studies = ("latency", "batching", "concurrency", "decomposition", "colocation")
    needs_onnx = True
    uses_torch = False
    settings = Runtime.settings | ONNX_FILE_SETTINGS | {"graph": (GRAPH_LEVELS, "all")}

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        import onnxruntime as ort

        if device == "cuda" and "CUDAExecutionProvider" not in ort.get_available_providers():
            return (
                f"onnxruntime {ort.__version__} here has no CUDAExecutionProvider (install onnxruntime-gpu)"
            )
        return None

    def load(self) -> None:
        self.tokenizer = load_tokenizer(self.model_dir)
        self.graph = self.choice("graph")
        self.session = ort_session(
            self.onnx_path, self.threads, self.device, self.graph, operators=self.options.get("operators")
        )

    def score(self, pairs):
        return ort_run(self.session, self.encode(pairs, "np")).tolist()

    def score_row(self, pair):
        # The same calls as score(), timed apart: the language table splits native's difference
        # from this runtime into tokenizing and the engine's call (the native engine does the same).
        start = time.perf_counter()
        encoded = self.encode([pair], "np")
        tokenized = time.perf_counter()
        score = float(ort_run(self.session, encoded)[0])
        split = {
            "tokenize_us": (tokenized - start) * 1e6,
            "infer_ms": (time.perf_counter() - tokenized) * 1e3,
        }
        return score, split

    def describe(self) -> dict:
        import onnxruntime as ort

        options = self.session.get_session_options()
        return super().describe() | {
            "onnxruntime": ort.__version__,
            "library": ort.capi._pybind_state.__file__,
            "providers": self.session.get_providers(),
            "intra_op_threads": options.intra_op_num_threads,
            "inter_op_threads": options.inter_op_num_threads,
            "graph_optimization": self.graph,
            "operators": self.options.get("operators"),
        }
