"""One module per runtime behind the small interface in base.py.

Adding a runtime is one module here plus one line in RUNTIMES: its class declares the studies it
joins, its settings and whether it loads ONNX or PyTorch (base.Runtime), and the config checks,
the rules and the tables read that declaration.
"""

from __future__ import annotations

import importlib

from rmbench.models.build import without_torch
from rmbench.runtimes.base import Runtime, Unsupported

RUNTIMES = {
    "hf_eager": "rmbench.runtimes.hf_eager:HFEagerRuntime",
    "torch_compile": "rmbench.runtimes.torch_compile:TorchCompileRuntime",
    "fastapi": "rmbench.runtimes.fastapi_service:FastAPIRuntime",
    "ort_python": "rmbench.runtimes.ort_python:OrtPythonRuntime",
    "native": "rmbench.runtimes.native:NativeRuntime",
    "openvino": "rmbench.runtimes.openvino:OpenVinoRuntime",
    "batching_server": "rmbench.runtimes.batching_server:BatchingServerRuntime",
}


def runtime_class(name: str) -> type[Runtime]:
    if name not in RUNTIMES:
        raise KeyError(f"unknown runtime '{name}' (known: {', '.join(RUNTIMES)})")
    module, cls = RUNTIMES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def native_engine_needed(runtime: str, options: dict) -> bool:
    """Whether a cell of `runtime` runs the native engine: the runtime's declaration. The tokenizer
    and GEMM studies' cells name tokenizers and libraries; the native engine's own tokenizer is
    the runtime's namesake."""
    return runtime in RUNTIMES and runtime_class(runtime).native_engine_needed(options)


def runtimes_of(study: str) -> list[str]:
    """The registered runtimes that may join `study`."""
    return [name for name in RUNTIMES if study in runtime_class(name).studies]


def check_runtimes(config: dict) -> None:
    """Stops with a clear message where a scoring study names a runtime that does not join it."""
    from rmbench.errors import RmbenchError

    scoring = {study for name in RUNTIMES for study in runtime_class(name).studies}
    for study, cfg in config["studies"].items():
        if study not in scoring:  # the tokenizer and gemm studies time libraries, not runtimes
            continue
        unknown = [name for name in cfg["runtimes"] if name not in runtimes_of(study)]
        if unknown:
            raise RmbenchError(
                f"studies.{study}.runtimes names {', '.join(unknown)}, which is not a runtime of this "
                f"study (its runtimes: {', '.join(runtimes_of(study))}). A new runtime is a module in "
                "workflow/rmbench/runtimes/ and a line in RUNTIMES (docs/runtimes.md)."
            )


def check_variants(config: dict) -> None:
    """Stops with a clear message when a decomposition variant asks a runtime for something it lacks."""
    from rmbench.errors import RmbenchError

    study = config["studies"].get("decomposition")
    if not study or not study.get("enabled", True):
        return
    for runtime, cfg in study["runtimes"].items():
        allowed = {key: values for key, (values, _) in runtime_class(runtime).settings.items()}
        for variant in cfg.get("variants") or study.get("variants") or [{}]:
            if "matmuls" in variant and variant.get("precision") != "int8":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: matmuls={variant['matmuls']} chooses "
                    "which MatMuls int8 quantizes; give it with precision: int8"
                )
            if variant.get("head", "same") != "same" and variant.get("precision") != "bf16":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: head={variant['head']} keeps the "
                    "reward head out of bf16 autocast; give it with precision: bf16"
                )
            if variant.get("prepack", "on") != "on" and variant.get("freezing") != "on":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: prepack={variant['prepack']} changes "
                    "how Inductor's freezing packs the weights; give it with freezing: on"
                )
            if variant.get("precision") == "int8" and variant.get("optimizer", "none") != "none":
                raise RmbenchError(
                    f"studies.decomposition.runtimes.{runtime}: int8 with optimizer "
                    f"{variant['optimizer']} is not built; use one of them per variant"
                )
            for key, value in variant.items():
                if key not in allowed or str(value) not in allowed[key]:
                    choices = "; ".join(f"{k}: {', '.join(v)}" for k, v in allowed.items())
                    raise RmbenchError(
                        f"studies.decomposition.runtimes.{runtime}: variant {key}={value} is not "
                        f"supported (this runtime takes {choices})"
                    )


def family_reason(runtime: str, declared: dict, options: dict) -> str | None:
    """Why `runtime` (a runtime, or a library the tokenizer study times) cannot run a cell of a
    model of family `declared` with these options; None when it can."""
    if runtime not in RUNTIMES:  # a library the tokenizer study times
        from rmbench.models.families import library_reason

        return library_reason(runtime, declared)
    return runtime_class(runtime).family_reason(declared, options)


def service_baselines() -> dict[str, tuple[str, ...]]:
    """Each service and the in-process engines the concurrency study compares it with."""
    return {name: runtime_class(name).compared_with for name in RUNTIMES if runtime_class(name).compared_with}


def spare_torch_import(runtime: str, device: str, options: dict) -> None:
    """Tells transformers not to import PyTorch in a CPU process that runs `runtime` without it
    (about 5 s of start-up). CUDA processes keep it: onnxruntime-gpu may rely on the CUDA
    libraries that torch loads."""
    if device == "cpu" and not runtime_class(runtime).needs_torch(options):
        without_torch()


__all__ = [
    "RUNTIMES",
    "Runtime",
    "Unsupported",
    "check_runtimes",
    "family_reason",
    "runtime_class",
    "runtimes_of",
    "service_baselines",
    "spare_torch_import",
]
