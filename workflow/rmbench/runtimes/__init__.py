"""One module per runtime behind the small interface in base.py.

Adding a runtime is one module here plus one entry in RUNTIMES (and in the config schema).
"""

from __future__ import annotations

import importlib

from ..models import without_torch
from .base import Runtime, Unsupported

RUNTIMES = {
    "hf_eager": "rmbench.runtimes.hf_eager:HFEagerRuntime",
    "torch_compile": "rmbench.runtimes.torch_compile:TorchCompileRuntime",
    "fastapi": "rmbench.runtimes.fastapi_service:FastAPIRuntime",
    "ort_python": "rmbench.runtimes.ort_python:OrtPythonRuntime",
    "native": "rmbench.runtimes.native:NativeRuntime",
    "batching_server": "rmbench.runtimes.batching_server:BatchingServerRuntime",
}


def runtime_class(name: str) -> type[Runtime]:
    if name not in RUNTIMES:
        raise KeyError(f"unknown runtime '{name}' (known: {', '.join(RUNTIMES)})")
    module, cls = RUNTIMES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def spare_torch_import(runtime: str, device: str, options: dict) -> None:
    """Tells transformers not to import PyTorch in a CPU process that runs `runtime` without it
    (about 5 s of start-up). CUDA processes keep it: onnxruntime-gpu may rely on the CUDA
    libraries that torch loads."""
    if device == "cpu" and not runtime_class(runtime).needs_torch(options):
        without_torch()


__all__ = ["RUNTIMES", "Runtime", "Unsupported", "runtime_class", "spare_torch_import"]
