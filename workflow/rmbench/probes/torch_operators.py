"""Why a PyTorch batch can be faster per row when ONNX Runtime's is not: torch.profiler's view of
a PyTorch runtime (eager or torch.compile) scoring a set's first rows, each alone and as a batch
of copies of itself (no padding), the batch sizes taking turns row by row.

The profiles have the shape of ONNX Runtime's (rmbench.studies.decomposition.operator_profiles), so one
table function compares a batch's operators with its rows alone for both libraries.
"""

from __future__ import annotations

import re
import time
from collections import Counter

from rmbench.probes.flops import relative_projection_flops, weight_gemm_flops
from rmbench.probes.operators import MATRIX_OPS

# The operator type of a weight product (nn.Linear on the CPU), whose work weight_gemm_work counts.
WEIGHT_GEMM = "aten::addmm"

# Inductor names its kernels per compiled graph ("graph_3_cpp_fused_gelu_view_3") and its calls by
# a hash; a batch of another shape is another graph, so the names are made comparable.
_RENAMES = (
    (re.compile(r"^graph_\d+_(.*?)(_\d+)?$"), r"\1"),
    (re.compile(r"^## Call CompiledFxGraph \w+ ##$"), "Inductor graph call"),
    (re.compile(r"^Torch-Compiled Region: \d+/\d+$"), "Torch-Compiled Region"),
)


def operator_name(key: str) -> str:
    """A profiler event's name with the compiled graph's number and hash taken out."""
    for pattern, name in _RENAMES:
        key = pattern.sub(name, key)
    return key


def torch_operator_profiles(runtime, pairs: list[tuple[str, str]], warmup: int, batches: tuple[int, ...]):
    """Per batch size b in `batches`: each pair after `warmup` scored as b copies of itself by the
    loaded PyTorch `runtime`, its operators' self CPU time per row scored by type (as
    torch.profiler reports them; Inductor's generated kernels by name), the matrix products'
    share, and the whole score call's wall time per row (`call_ms_per_row`, tokenizing included).
    The warm-up rows run every batch size first, so torch.compile has compiled each shape before
    anything is counted. Profiling slows every operator a little: read the differences."""
    from torch.profiler import ProfilerActivity, profile

    for pair in pairs[:warmup]:
        for batch in batches:
            runtime.score([pair] * batch)
    counted = pairs[warmup:]
    if not counted:
        raise ValueError(f"torch operator profile: {len(pairs)} rows, none after {warmup} warm-up rows")
    times: dict[int, Counter] = {batch: Counter() for batch in batches}
    wall = Counter()
    for i, pair in enumerate(counted):
        for batch in batches if i % 2 == 0 else batches[::-1]:  # alternating: drift falls on both
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                start = time.perf_counter()
                runtime.score([pair] * batch)
                wall[batch] += time.perf_counter() - start
            for event in prof.key_averages():
                times[batch][operator_name(event.key)] += event.self_cpu_time_total
    profiles = {}
    for batch, by_op in times.items():
        total, measured = sum(by_op.values()), len(counted) * batch
        profiles[batch] = {
            "rows": measured,
            "batch": batch,
            "threads": runtime.threads,
            "call_ms_per_row": 1000 * wall[batch] / measured,
            "operators": [
                {"op_type": op, "ms_per_row": us / 1000 / measured, "share": us / total}
                for op, us in by_op.most_common()
            ],
            "matrix_share": sum(us for op, us in by_op.items() if op in MATRIX_OPS) / total,
        }
    return profiles


def weight_gemm_work(config: dict, tokens: list[int], batch: int) -> float:
    """GFLOP per row scored that the weight products do when each row of these lengths is scored
    as a batch of `batch` copies: each copy's own, plus DeBERTa's relative-position projections,
    once per call and so shared by the batch (the pooler and head, a few MFLOP, not counted)."""
    own = sum(weight_gemm_flops(config, n) for n in tokens) * batch
    shared = relative_projection_flops(config) * len(tokens)
    return (own + shared) / (len(tokens) * batch) / 1e9
