"""The fp32 GEMM ceiling: each library's matmul rate on a model's own encoder shapes.

One launch times one library (torch, onnxruntime/MLAS, numpy/OpenBLAS) on the weight GEMMs of one
layer at m = `tokens` rows (rmbench.probes.flops.layer_weight_shapes: Q, K, V and output projections and
the feed-forward's two or three matrices), weights constant as in a model. The best library's rate is the
roofline the runtimes' achieved FLOP/s are compared with.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from rmbench.plan.cells import parse_params
from rmbench.probes.flops import layer_weight_shapes

ITERATIONS = 20
WARMUP = 3
ONNX_IR_VERSION = 10  # onnx 1.23 writes IR 14 by default, which ORT 1.30 rejects (max 13)


def layer_shapes(model_dir: str | Path, tokens: int) -> list[tuple[str, int, int, int]]:
    """(name, m, k, n) for the weight GEMMs of one layer of the model in `model_dir`."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    return [(name, tokens, k, n) for name, k, n in layer_weight_shapes(config)]


def _timed(run, iterations: int) -> list[float]:
    for _ in range(WARMUP):
        run()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _torch_gemm(m, k, n, threads):
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(m, k), torch.randn(k, n)

    def run():
        with torch.inference_mode():
            torch.matmul(a, b)

    return run, {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def _onnxruntime_gemm(m, k, n, threads):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n), np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])],
        "gemm",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [m, n])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ONNX_IR_VERSION
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    a = np.random.default_rng(1).standard_normal((m, k), np.float32)
    return (lambda: session.run(None, {"a": a})), {"onnxruntime": ort.__version__, "onnx": onnx.__version__}


def _numpy_gemm(m, k, n, threads):
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(threads)  # numpy's BLAS pool, set like torch's and ORT's
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    blas = [f"{p['internal_api']} {p['version']}" for p in threadpool_info() if p["user_api"] == "blas"]
    return (lambda: np.matmul(a, b)), {"numpy": np.__version__, "blas": blas}


GEMMS = {"torch": _torch_gemm, "onnxruntime": _onnxruntime_gemm, "numpy": _numpy_gemm}


def layer_rate(library: str, shapes, threads: int, iterations: int = ITERATIONS) -> tuple[dict, dict, dict]:
    """One library on one layer's GEMMs: median ms, GFLOP/s and shape per GEMM; the whole layer's
    ms and GFLOP/s; and what the library reports about itself."""
    per_shape, described = {}, {}
    layer_ms, layer_flops = 0.0, 0.0
    for name, m, k, n in shapes:
        run, described = GEMMS[library](m, k, n, threads)
        ms = float(np.median(_timed(run, iterations)))
        flops = 2.0 * m * k * n
        per_shape[name] = {"m": m, "k": k, "n": n, "ms": ms, "gflops": flops / ms / 1e6}
        layer_ms += ms
        layer_flops += flops
    return per_shape, {"ms": layer_ms, "gflops": layer_flops / layer_ms / 1e6}, described


def run_gemm_launch(cell: dict, model_dir, settings: dict) -> dict:
    """One launch: every layer GEMM of the model with one library; median ms and GFLOP/s each.
    A cell with `tokens~n` times a row of n tokens instead of the study's, and one with `batch~b`
    the GEMMs of b rows at once (m = tokens x b): at which m does each library reach its rate?"""
    library, threads = cell["runtime"], settings["threads"]
    params = parse_params(cell["params"])
    rows = int(params.get("tokens", settings.get("tokens", 256))) * int(params.get("batch", 1))
    per_shape, layer, described = layer_rate(library, layer_shapes(model_dir, rows), threads)
    record = {"cell": cell, "settings": settings, "status": "ok", "reason": None}
    record["metrics"] = {
        "layer_ms": layer["ms"],
        "gflops": layer["gflops"],
        "ffn_gflops": float(np.mean([per_shape[s]["gflops"] for s in ("ffn_up", "ffn_down")])),
        "iterations": ITERATIONS,
        "shapes": per_shape,
    }
    record["runtime"] = {"name": library, "threads": threads} | described
    return record


# The in-launch probe leaves torch out: its rate was the lowest of the three in every gemm study
# run here, and importing it would cost the ORT and native launches seconds.
PROBE_LIBRARIES = ("onnxruntime", "numpy")
PROBE_ITERATIONS = 10


def probe_ceiling(model_dir, tokens: int, threads: int) -> dict:
    """The GEMM ceiling measured inside a launch, before its engine loads and after its timed
    region: one encoder layer's GEMMs at `tokens` rows (the launch's median row length), each
    probe library at the launch's threads. The achieved FLOP/s it is compared with were measured
    seconds apart, in the same process, so the machine's drift over a run cancels in the
    fraction."""
    shapes = layer_shapes(model_dir, tokens)
    rates = {
        library: layer_rate(library, shapes, threads, PROBE_ITERATIONS)[1]["gflops"]
        for library in PROBE_LIBRARIES
    }
    best = max(rates, key=rates.get)
    return {
        "ceiling_gflops": rates[best],
        "ceiling_library": best,
        "ceiling_tokens": tokens,
        "ceiling_rates": rates,
    }


def best_probe(probes: list[dict]) -> dict:
    """The highest of several probe_ceiling results, with every probe's rate: a ceiling is what
    the machine gives at best, and one probe can fall in a dip of a shared host."""
    best = max(probes, key=lambda probe: probe["ceiling_gflops"])
    return best | {"ceiling_probes_gflops": [probe["ceiling_gflops"] for probe in probes]}
