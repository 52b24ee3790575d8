"""Where and with what a measurement was taken: stored with every launch result."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

PACKAGES = ("torch", "transformers", "onnxruntime", "optimum-onnx", "tokenizers", "numpy")
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "TOKENIZERS_PARALLELISM",
    "CUDA_VISIBLE_DEVICES",
)


def _git(repo: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def device_name(device: str) -> str:
    if device == "cuda":
        try:
            import torch

            if torch.cuda.is_available():
                return torch.cuda.get_device_name(0)
        except ImportError:
            pass
        return "no CUDA device"
    return cpu_model()


def package_versions() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def provenance(repo: Path, device: str) -> dict:
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return {
        "git_commit": _git(repo, "rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "hostname": platform.node(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "device": device,
        "device_name": device_name(device),
        "packages": package_versions(),
        "environment": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
