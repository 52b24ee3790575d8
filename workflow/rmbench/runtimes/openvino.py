"""OpenVINO from Python: Intel's inference engine, reading the same exported ONNX file as ONNX
Runtime and compiling it for the CPU."""

from __future__ import annotations

import numpy as np

from rmbench.export.onnx_files import PORTABLE_OPTIMIZERS
from rmbench.models.build import load_tokenizer
from rmbench.runtimes.base import ONNX_FILE_SETTINGS, Runtime, Unsupported

# OpenVINO's CPU plugin runs in bf16 by default where the processor has it (AVX-512 BF16, AMX):
# an fp32 study pins fp32, so every runtime computes at the same precision.
PRECISION_HINTS = {"fp32": "f32", "bf16": "bf16"}


class OpenVinoRuntime(Runtime):
    """Options: inference_precision (fp32 | bf16, default fp32), OpenVINO's inference precision
    hint; cpu_pinning (on | off, default on), ENABLE_CPU_PINNING: on, OpenVINO binds its threads to
    cores of its own choice, over any affinity the launch sets (off for the co-location study,
    whose core split pins the scorer). Threads: the study's `threads` as INFERENCE_NUM_THREADS,
    one stream, the latency hint."""

    name = "openvino"
    studies = ("latency", "batching", "colocation")
    needs_onnx = True
    uses_torch = False
    settings = (
        Runtime.settings
        | ONNX_FILE_SETTINGS
        # not the exports that call the native engine's operators: those run in ONNX Runtime only
        | {"optimizer": (PORTABLE_OPTIMIZERS, "none")}
        | {"inference_precision": (tuple(PRECISION_HINTS), "fp32"), "cpu_pinning": (("on", "off"), "on")}
    )

    @classmethod
    def unavailable_reason(cls, device: str, options: dict | None = None) -> str | None:
        try:
            import openvino  # noqa: F401
        except ImportError as error:
            return f"openvino is not installed ({error}); bash envs/setup.sh installs it from the lock"
        if device != "cpu":
            return "OpenVINO's GPU plugin drives Intel GPUs, not NVIDIA's: its cells run on the CPU only"
        return None

    def load(self) -> None:
        import openvino as ov

        self.tokenizer = load_tokenizer(self.model_dir)
        self.precision = self.choice("inference_precision")
        core = ov.Core()
        try:
            self.compiled = core.compile_model(
                core.read_model(str(self.onnx_path)),
                "CPU",
                {
                    "INFERENCE_NUM_THREADS": self.threads,
                    "NUM_STREAMS": 1,
                    "PERFORMANCE_HINT": "LATENCY",
                    "INFERENCE_PRECISION_HINT": PRECISION_HINTS[self.precision],
                    "ENABLE_CPU_PINNING": self.choice("cpu_pinning") == "on",
                },
            )
        except RuntimeError as error:  # an operator it cannot read or compile
            raise Unsupported(
                f"OpenVINO {ov.get_version()} cannot compile {self.onnx_path.name}: {error}"
            ) from error
        self.input_names = [port.get_any_name() for port in self.compiled.inputs]
        self.request = self.compiled.create_infer_request()

    def score(self, pairs):
        encoded = self.encode(pairs, "np")
        feed = {name: np.asarray(encoded[name], dtype=np.int64) for name in self.input_names}
        logits = self.request.infer(feed)[self.compiled.outputs[0]]
        return logits[:, 0].astype(float).tolist()

    def close(self) -> None:
        self.request = self.compiled = None

    def describe(self) -> dict:
        import openvino as ov

        return super().describe() | {
            "openvino": ov.get_version(),
            "inference_num_threads": int(self.compiled.get_property("INFERENCE_NUM_THREADS")),
            "enable_cpu_pinning": bool(self.compiled.get_property("ENABLE_CPU_PINNING")),
            # what it compiled with, as OpenVINO names it (f32, bf16)
            "inference_precision": self.compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
        }
