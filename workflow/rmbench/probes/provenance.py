"""Where and with what a measurement was taken: stored with every launch result."""

from __future__ import annotations

import datetime
import glob
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

PACKAGES = ("torch", "transformers", "onnxruntime", "openvino", "optimum-onnx", "tokenizers", "numpy")
ENVIRONMENT_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "TOKENIZERS_PARALLELISM",
    "CUDA_VISIBLE_DEVICES",
    "USE_TORCH",  # "0": transformers was told not to import PyTorch (models.without_torch)
    "ORT_DISABLE_TELEMETRY",  # "1": ONNX Runtime ran no telemetry thread (config: onnxruntime_telemetry)
)
# ONNX Runtime 1.30 keeps its telemetry off by itself wherever one of these is set (the names are
# in its library), whatever ORT_DISABLE_TELEMETRY says: recorded too, so that a launch shows which
# of the two decided it.
ONNXRUNTIME_CI_VARIABLES = (
    "CI",
    "TF_BUILD",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "CIRCLECI",
    "TRAVIS",
    "JENKINS_URL",
    "CODEBUILD_BUILD_ID",
    "BUILDKITE",
    "TEAMCITY_VERSION",
    "APPVEYOR",
    "BITBUCKET_BUILD_NUMBER",
)


def set_onnxruntime_telemetry(enabled: bool) -> None:
    """ONNX Runtime 1.30 runs telemetry in every process that loads it: a background thread that
    queues events (run-time statistics among them) in an SQLite file under ~/.cache/Microsoft and
    an empty $TMPDIR/mat-debug-<pid>.log. Set for this process and the ones it starts (every job
    of the workflow); each launch records the variable (ENVIRONMENT_VARIABLES)."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "0" if enabled else "1"


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


# The instruction sets that decide which kernels the libraries pick (AVX-512 GEMMs, VNNI int8,
# bf16, AMX): the same model name can come with different sets on virtual machines.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")


def cpu_flags() -> list[str]:
    """Which of ISA_FLAGS this CPU reports (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    present = set(line.split(":", 1)[-1].split())
    return [flag for flag in ISA_FLAGS if flag in present]


# Microarchitectures by (vendor, family, first model, last model): virtual machines often report
# only "AMD EPYC", and two generations under that name differ twofold in speed.
MICROARCHITECTURES = (
    ("AuthenticAMD", 23, 0x00, 0x2F, "Zen/Zen+"),
    ("AuthenticAMD", 23, 0x30, 0xFF, "Zen 2"),
    ("AuthenticAMD", 25, 0x00, 0x0F, "Zen 3"),
    ("AuthenticAMD", 25, 0x10, 0x1F, "Zen 4"),
    ("AuthenticAMD", 25, 0x20, 0x5F, "Zen 3"),
    ("AuthenticAMD", 25, 0x60, 0x7F, "Zen 4"),
    ("AuthenticAMD", 25, 0xA0, 0xAF, "Zen 4c"),
    ("AuthenticAMD", 26, 0x00, 0xFF, "Zen 5"),
    ("GenuineIntel", 6, 0x3F, 0x3F, "Haswell"),
    ("GenuineIntel", 6, 0x4F, 0x4F, "Broadwell"),
    ("GenuineIntel", 6, 0x55, 0x55, "Skylake/Cascade Lake"),
    ("GenuineIntel", 6, 0x6A, 0x6C, "Ice Lake"),
    ("GenuineIntel", 6, 0x8F, 0x8F, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0xCF, 0xCF, "Emerald Rapids"),
    ("GenuineIntel", 6, 0xAD, 0xAE, "Granite Rapids"),
)


def microarchitecture(vendor: str, family: int, model: int) -> str | None:
    return next(
        (
            name
            for v, f, lo, hi, name in MICROARCHITECTURES
            if (v, f) == (vendor, family) and lo <= model <= hi
        ),
        None,
    )


def cpu_caches(cpu_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> dict[str, int]:
    """The data caches one core sees, in KiB ('L1d', 'L2', 'L3'); empty where Linux does not say."""
    caches = {}
    for index in sorted(cpu_dir.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        if kind != "Instruction" and size.endswith("K"):
            caches[f"L{level}" + ("d" if kind == "Data" else "")] = int(size[:-1])
    return caches


def cpu_signature(cpuinfo: str | None = None) -> dict:
    """The processor as its kernels see it: vendor, family, model and stepping (from
    /proc/cpuinfo), the microarchitecture where the family and model are known, and its caches.
    Empty where /proc/cpuinfo cannot be read."""
    try:
        text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            break  # the first processor's block
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    try:
        vendor, family, model = fields["vendor_id"], int(fields["cpu family"]), int(fields["model"])
    except (KeyError, ValueError):
        return {}
    return {
        "vendor": vendor,
        "family": family,
        "model": model,
        "stepping": int(fields["stepping"]) if fields.get("stepping", "").isdigit() else None,
        "microarchitecture": microarchitecture(vendor, family, model),
        "caches_kib": cpu_caches(),
    }


# The kind of machine a launch ran on, from its provenance: the processor (its signature where
# recorded), the widest of its instruction sets that the libraries dispatch on, and the CPUs the
# launch could use (a GPU launch: the GPU). Launches of one kind are comparable; the host name is
# not part of it (every VM here is called "vm", and nodes of one kind on a cluster are
# interchangeable).
ISA_TIERS = (("amx_tile", "AMX"), ("avx512f", "AVX-512"), ("avx2", "AVX2"))
# The extensions within a tier that change which int8 and bf16 kernels run.
ISA_EXTENSIONS = (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16"))


def _kib(size: int) -> str:
    return f"{size // 1024} MiB" if size >= 1024 and size % 1024 == 0 else f"{size} KiB"


def signature_label(signature: dict) -> list[str]:
    """'Zen 4 (family 25 model 17 stepping 1)', 'L2 1 MiB', 'L3 32 MiB'; none for no signature."""
    if not signature:
        return []
    name = signature.get("microarchitecture") or "unknown microarchitecture"
    numbers = f"family {signature['family']} model {signature['model']}"
    if signature.get("stepping") is not None:
        numbers += f" stepping {signature['stepping']}"
    caches = signature.get("caches_kib") or {}
    return [
        f"{name} ({numbers})",
        *(f"{level} {_kib(caches[level])}" for level in ("L2", "L3") if level in caches),
    ]


def host_label(prov: dict) -> str:
    """'AMD EPYC, Zen 4 (family 25 model 17 stepping 1), L2 1 MiB, L3 32 MiB, AVX-512 VNNI BF16,
    2 CPUs' or 'NVIDIA H200'; '' for a record without provenance. Records from before the
    signature was recorded name the processor, its widest ISA and the CPUs only."""
    if not prov:
        return ""
    if prov.get("device") == "cuda" and prov.get("device_name") != "no CUDA device":
        return prov.get("device_name") or ""
    flags = prov.get("cpu_flags") or ()
    signature = prov.get("cpu_signature") or {}
    isa = next((name for flag, name in ISA_TIERS if flag in flags), "SSE")
    if signature:  # the extensions too: records without a signature keep the label they had
        isa = " ".join([isa, *(name for flag, name in ISA_EXTENSIONS if flag in flags)])
    parts = [prov.get("cpu") or "unknown CPU", *signature_label(signature), isa]
    cpus = prov.get("usable_cpus") or prov.get("logical_cpus")
    if cpus:
        parts.append(f"{cpus} CPUs")
    return ", ".join(parts)


HOST_SEPARATOR = "; "  # between the kinds of host of one cell (a host label has commas)


def host_cell(hosts) -> str:
    """A `host` column's text for these kinds of machine (host_label): each once,
    sorted; '' for none."""
    return HOST_SEPARATOR.join(sorted({h for h in hosts if h}))


def cell_hosts(cell) -> list[str]:
    """The kinds of machine a `host` cell names (none for an empty or missing one)."""
    return [h for h in cell.split(HOST_SEPARATOR) if h] if isinstance(cell, str) else []


def launch_hosts(rows) -> list[str]:
    """The kinds of machine these launches (or summary rows) ran on, from their `host` column
    (a summary row lists several); none where unrecorded."""
    if "host" not in rows:
        return []
    return sorted({h for cell in rows["host"] for h in cell_hosts(cell)})


def nvidia_gpu_present() -> bool:
    """Whether this machine shows an NVIDIA GPU device file: known without importing torch."""
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def device_name(device: str) -> str:
    if device == "cuda":
        if not nvidia_gpu_present():  # a skipped GPU cell need not import torch to say so
            return "no CUDA device"
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
    torch_loaded = "torch" in sys.modules  # before device_name, which may import it
    status = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return {
        "git_commit": _git(repo, "rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "hostname": platform.node(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cpu_signature": cpu_signature(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "device": device,
        "device_name": device_name(device),
        "torch_loaded": torch_loaded,
        "packages": package_versions(),
        "environment": {
            k: os.environ[k] for k in ENVIRONMENT_VARIABLES + ONNXRUNTIME_CI_VARIABLES if k in os.environ
        },
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
