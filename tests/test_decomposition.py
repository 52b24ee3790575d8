"""The decomposition study's parts: ORT graph levels, torch precisions and freezing, int8
quantization, the fidelity gate, and the gap and fidelity tables computed by hand."""

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT
from rmbench.errors import ModelSourceError, RmbenchError
from rmbench.export.onnx import reference_scores
from rmbench.export.precision import (
    fidelity_report,
    loaded,
    matmul_nodes,
    pair_scores,
    preference_fidelity,
    quantize_int8,
    sweep_settings,
    timed_settings,
)
from rmbench.models.build import reward_head
from rmbench.models.families import family
from rmbench.plan.cells import check_references, step_name
from rmbench.probes.operators import batch_operator_table, operator_profile, operator_profiles, operator_table
from rmbench.report.figures import decomposition_figure, gap_figure
from rmbench.report.latex import batch_operator_latex, fidelity_latex
from rmbench.report.tables import launch_row
from rmbench.runtimes import check_variants, runtime_class
from rmbench.studies.decomposition import POOLED_SET, fidelity_table, fp32_counterparts, gap_table


@pytest.fixture(scope="module")
def reference(tiny_model):
    return reference_scores(tiny_model["model"], tiny_model["rows"], threads=1)


def engine(tiny_model, name, onnx=None, **options):
    runtime = runtime_class(name)(tiny_model["model"], onnx or tiny_model["onnx"], "cpu", 1, 512, options)
    runtime.load()
    return runtime


def pairs(tiny_model, reply="response"):
    return [(r["prompt"], r[reply]) for r in tiny_model["rows"]]


@pytest.mark.parametrize("graph", ["disabled", "basic", "extended", "all"])
def test_every_ort_graph_level_scores_like_the_reference(tiny_model, reference, graph):
    runtime = engine(tiny_model, "ort_python", graph=graph)
    assert runtime.describe()["graph_optimization"] == graph
    assert np.allclose(runtime.score(pairs(tiny_model)), reference, atol=1e-4)


def test_an_unknown_graph_level_is_refused(tiny_model):
    with pytest.raises(ValueError, match="graph must be one of disabled, basic, extended, all"):
        engine(tiny_model, "ort_python", graph="everything")


def test_bf16_autocast_changes_scores_a_little_and_fp32_not_at_all(tiny_model, reference):
    fp32 = engine(tiny_model, "hf_eager", precision="fp32").score(pairs(tiny_model))
    bf16 = engine(tiny_model, "hf_eager", precision="bf16")
    scores = bf16.score(pairs(tiny_model))
    assert np.allclose(fp32, reference, atol=1e-5)
    assert 0 < np.abs(np.subtract(scores, reference)).max() < 0.5  # bfloat16 keeps 8 bits of mantissa
    assert bf16.describe()["precision"] == "bf16" and "torch_config" in bf16.describe()
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16"):
        engine(tiny_model, "hf_eager", precision="int8")


def test_bf16_with_the_head_in_fp32_rounds_only_the_encoder(tiny_model, reference, tmp_path):
    import torch

    plain = engine(tiny_model, "hf_eager", precision="bf16")
    kept = engine(tiny_model, "hf_eager", precision="bf16", head="fp32")
    final = {}
    for name, runtime in (("plain", plain), ("kept", kept)):
        layer = runtime.model.get_submodule("classifier.out_proj")
        layer.register_forward_hook(lambda mod, args, out, name=name: final.update({name: out.dtype}))
        final[name + "_scores"] = runtime.score(pairs(tiny_model))
    # autocast rounds the score's last product to bf16; the kept head computes it in fp32
    assert final["plain"] == torch.bfloat16 and final["kept"] == torch.float32
    assert final["kept_scores"] != final["plain_scores"]
    assert 0 < np.abs(np.subtract(final["kept_scores"], reference)).max() < 0.5
    assert kept.describe()["head"] == "fp32" and plain.describe()["head"] == "same"
    with pytest.raises(ValueError, match="give it with precision bf16"):
        engine(tiny_model, "hf_eager", head="fp32")
    compiled = engine(tiny_model, "torch_compile", precision="bf16", head="fp32", cache_root=str(tmp_path))
    assert compiled.describe()["cache_dir"].endswith("-bf16-head-fp32")  # its own Inductor cache
    with pytest.raises(ModelSourceError, match="none of the declared families. classes"):
        reward_head(torch.nn.Linear(2, 1))


def test_eager_through_onednn_kernels_scores_like_the_reference(tiny_model, reference):
    runtime = engine(tiny_model, "hf_eager", kernels="onednn")
    assert np.allclose(runtime.score(pairs(tiny_model)), reference, atol=1e-4)
    assert type(runtime.model.base_model.encoder.layer[0].intermediate.dense).__name__ == "MkldnnLinear"
    assert runtime.describe()["kernels"] == "onednn"
    with pytest.raises(ValueError, match="kernels onednn is a CPU fp32 path, not cpu bf16"):
        engine(tiny_model, "hf_eager", kernels="onednn", precision="bf16")
    with pytest.raises(ValueError, match="kernels must be one of default, onednn"):
        engine(tiny_model, "hf_eager", kernels="mkl")


PACKED_LINEAR = {"mkldnn::_linear_pointwise", "mkl::_mkl_linear"}

# One frozen compile in a fresh process, as a launch: the products its linear layers ran, and the
# score of the pair it compiled for.
LINEAR_KERNELS = """
import json, sys
sys.path.insert(0, sys.argv[1])
from torch.profiler import ProfilerActivity, profile
from rmbench.runtimes import runtime_class
options = json.loads(sys.argv[3])
runtime = runtime_class("torch_compile")(sys.argv[2], None, "cpu", 1, 512, options)
runtime.load()
pair = tuple(json.loads(sys.argv[4]))
runtime.score([pair])
with profile(activities=[ProfilerActivity.CPU]) as prof:
    score = runtime.score([pair])[0]
names = sorted({e.key for e in prof.key_averages()} & {"mkldnn::_linear_pointwise", "mkl::_mkl_linear", "aten::addmm", "aten::mm"})
print(json.dumps({"kernels": names, "score": score, "describe": runtime.describe(),
                  "compile": runtime.compile_metrics()}))
"""


def compiled_linear_kernels(tiny_model, tmp_path, pair, **options) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            LINEAR_KERNELS,
            str(ROOT / "workflow"),
            str(tiny_model["model"]),
            json.dumps(options | {"cache_root": str(tmp_path)}),
            json.dumps(pair),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_torch_compile_with_freezing_says_so_and_refuses_prepack_off_alone(tiny_model, tmp_path):
    runtime = engine(tiny_model, "torch_compile", freezing="on", cache_root=str(tmp_path))
    assert runtime.describe()["freezing"] == "on" and "freezing-on" in runtime.describe()["cache_dir"]
    with pytest.raises(ValueError, match="prepack off changes what freezing does; give it with freezing on"):
        engine(tiny_model, "torch_compile", prepack="off", cache_root=str(tmp_path))


def test_freezing_packs_the_linear_weights_unless_prepack_is_off_and_scores_alike(
    tiny_model, reference, tmp_path
):
    pair = pairs(tiny_model)[0]
    packed = compiled_linear_kernels(tiny_model, tmp_path, pair, freezing="on")
    unpacked = compiled_linear_kernels(tiny_model, tmp_path, pair, freezing="on", prepack="off")
    assert set(packed["kernels"]) & PACKED_LINEAR, packed["kernels"]  # oneDNN's or MKL's packed products
    assert unpacked["kernels"] and not set(unpacked["kernels"]) & PACKED_LINEAR, unpacked["kernels"]
    assert packed["score"] == pytest.approx(reference[0], abs=1e-4)  # frozen, as eager scores it
    assert unpacked["score"] == pytest.approx(packed["score"], abs=1e-4)
    assert unpacked["describe"]["prepack"] == "off" and unpacked["describe"]["cache_dir"].endswith(
        "-prepack-off"
    )
    # Inductor's graph cache takes no graph holding packed weights: the launch says so
    assert packed["compile"]["fxgraph_cache_bypasses"] >= 1, packed["compile"]
    assert unpacked["compile"]["fxgraph_cache_bypasses"] == 0, unpacked["compile"]
    assert unpacked["compile"]["fxgraph_cache_misses"] >= 1, unpacked["compile"]  # cached as any graph


@pytest.fixture(scope="module")
def int8_onnx(tiny_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("int8") / "model.int8.onnx"
    quantize_int8(tiny_model["onnx"], path, "qint8", per_channel=False, reduce_range=False)
    return path


def test_int8_file_has_integer_matmuls_and_scores_near_fp32(tiny_model, reference, int8_onnx):
    import onnx

    ops = {node.op_type for node in onnx.load(str(int8_onnx)).graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}
    scores = engine(tiny_model, "ort_python", onnx=int8_onnx).score(pairs(tiny_model))
    errors = np.abs(np.subtract(scores, reference))
    assert errors.max() > 1e-6 and errors.max() < 1.0  # quantized: not fp32, not garbage


def test_quantizing_leaves_the_source_folder_to_other_jobs(tiny_model, tmp_path):
    """ORT's quantizer writes `<name>-inferred.onnx` beside its input and deletes it: a second
    quantization of the same file running at once (snakemake --cores 2) lost its copy that way."""
    source = tmp_path / "model.onnx"
    source.symlink_to(tiny_model["onnx"])
    other_jobs = tmp_path / "model-inferred.onnx"
    other_jobs.write_bytes(b"another job's shape-inferred copy, half written")
    quantize_int8(source, tmp_path / "model.int8.onnx", "qint8", per_channel=False, reduce_range=False)
    assert other_jobs.read_bytes() == b"another job's shape-inferred copy, half written"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model-inferred.onnx",
        "model.int8.onnx",
        "model.onnx",
    ]


INTEGER_MATMULS = {"MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}


def test_quantizing_a_model_whose_weights_live_in_another_file(tiny_model, tmp_path):
    """Models over 2 GB keep their weights in a file beside the graph: quantizing reads them too."""
    import onnx

    source = tmp_path / "model.onnx"
    onnx.save_model(
        onnx.load(str(tiny_model["onnx"])), str(source), save_as_external_data=True, location="weights.bin"
    )
    graph = onnx.load(str(source), load_external_data=False).graph
    assert any(tensor.external_data for tensor in graph.initializer)
    quantize_int8(source, tmp_path / "model.int8.onnx", "qint8", per_channel=False, reduce_range=False)
    ops = {node.op_type for node in onnx.load(str(tmp_path / "model.int8.onnx")).graph.node}
    assert ops & INTEGER_MATMULS


# Per layer: the MatMul nodes of each group, and those with a constant weight (integer ones in int8):
# two feed-forward MatMuls (first, second); Q, K, V, output and two activation products.
GROUP_MATMULS = {
    "ffn": (2, 2),
    "attention": (6, 4),
    "ffn_in": (1, 1),
    "ffn_out": (1, 1),
    "attention-ffn_in": (7, 5),
    "attention-ffn_out": (7, 5),
}


@pytest.mark.parametrize("group", GROUP_MATMULS)
def test_int8_of_one_matmul_group_quantizes_that_group_only(tiny_model, tmp_path, group):
    import onnx

    parts = family("electra-large")["matmul_parts"]
    nodes = matmul_nodes(tiny_model["onnx"], group, parts)
    layers = tiny_model["cfg"]["layers"]
    assert len(nodes) == GROUP_MATMULS[group][0] * layers
    assert matmul_nodes(tiny_model["onnx"], "all", parts) is None  # quantize_dynamic's every-MatMul default
    if group.startswith("ffn_"):  # the feed-forward's two halves: disjoint, together `ffn`
        other = matmul_nodes(tiny_model["onnx"], "ffn_out" if group == "ffn_in" else "ffn_in", parts)
        assert not set(nodes) & set(other)
        assert sorted(nodes + other) == sorted(matmul_nodes(tiny_model["onnx"], "ffn", parts))
    path = tmp_path / "model.int8.onnx"
    quantize_int8(tiny_model["onnx"], path, "qint8", False, False, matmuls=group, matmul_parts=parts)
    ops = [node.op_type for node in onnx.load(str(path)).graph.node]
    # only the MatMuls with a constant weight become integer ones (not the two activation products)
    assert sum(op in INTEGER_MATMULS for op in ops) == GROUP_MATMULS[group][1] * layers
    with pytest.raises(RmbenchError, match="matmuls must be one of all, ffn, attention, ffn_in"):
        matmul_nodes(tiny_model["onnx"], "head", parts)


def test_sweep_settings_name_every_variant_over_the_quantization_default():
    config = {
        "models": {"e": {}},
        "sets": {"main60": {}},
        "quantization": {
            "weight_type": "qint8",
            "per_channel": False,
            "reduce_range": False,
            "matmuls": "all",
        },
        "quantization_sweep": {"set": "main60", "models": ["e"], "variants": [{}, {"reduce_range": True}]},
    }
    settings = sweep_settings(config)
    assert list(settings) == [
        "matmuls~all+per_channel~false+reduce_range~false+weight_type~qint8",
        "matmuls~all+per_channel~false+reduce_range~true+weight_type~qint8",
    ]
    assert (
        settings["matmuls~all+per_channel~false+reduce_range~true+weight_type~qint8"]["reduce_range"] is True
    )
    config["quantization_sweep"]["variants"].append({"weight_type": "qint8"})  # the default again
    with pytest.raises(RmbenchError, match="two variants give the same settings"):
        sweep_settings(config)
    config["quantization_sweep"] |= {"variants": [{}], "models": ["d"]}
    with pytest.raises(RmbenchError, match="names d, which config 'models' does not define"):
        check_references(config | {"studies": {}})  # the one check of every name a config uses
    config["quantization_sweep"]["models"] = ["e"]
    with pytest.raises(RmbenchError, match="fidelity.sets names set150, which config 'sets' does not define"):
        check_references(config | {"studies": {}, "fidelity": {"sets": ["set150"]}})


def test_sweep_table_ranks_settings_and_marks_the_timed_one():
    from rmbench.report.latex import sweep_latex
    from rmbench.studies.decomposition import sweep_table

    timed = {"weight_type": "qint8", "per_channel": False, "reduce_range": False, "matmuls": "all"}
    gate = {"pairs": 60, "flipped": 0, "mean_abs_delta": 0.1, "max_abs_delta": 0.3, "fp32_median_margin": 0.2}
    reports = [
        {
            "model": "m",
            "settings": timed,
            "quantized_matmuls": 24,
            "preference_agreement": 0.8,
            "passed": False,
        }
        | gate
        | {"flipped": 12},
        {"model": "m", "settings": timed | {"matmuls": "ffn"}, "quantized_matmuls": 8}
        | {"preference_agreement": 1.0, "passed": True}
        | gate,
    ]
    table = sweep_table([r | {"min_agreement": 0.99} for r in reports], [timed])
    assert list(table["matmuls"]) == ["ffn", "all"]  # best agreement first
    assert list(table["gate"]) == ["passed", "failed"] and list(table["timed"]) == [False, True]
    latex = sweep_latex(table, 0.99)
    assert "matmuls=all (timed)" in latex and r"80.0\%" in latex and "99\\% agreement" in latex
    # each agreement with its exact interval over the pairs: 48 of 60 is [67.7, 89.2], 60 of 60 [94.0, 100]
    assert r"80.0\% [67.67, 89.22]" in latex and r"100.0\% [94.04, 100.00]" in latex
    assert r"at only 94.0\%; 368 pairs without a flip would show 99\%" in latex
    both = sweep_table([r | {"min_agreement": 0.99} for r in reports], [timed, timed | {"matmuls": "ffn"}])
    assert list(both["timed"]) == [True, True]


def test_the_timed_int8_settings_are_the_default_and_each_variants_own_group():
    quantization = {"weight_type": "qint8", "per_channel": False, "reduce_range": False, "matmuls": "all"}
    runtimes = {
        "ort_python": {
            "variants": [{"graph": "all"}, {"precision": "int8"}, {"precision": "int8", "matmuls": "ffn_in"}]
        },
        "native": {"variants": [{"precision": "int8", "matmuls": "ffn_in"}]},
    }
    config = {"quantization": quantization, "studies": {"decomposition": {"runtimes": runtimes}}}
    assert timed_settings(config) == [quantization, quantization | {"matmuls": "ffn_in"}]
    assert timed_settings({"quantization": quantization, "studies": {}}) == []


def test_preference_fidelity_by_hand():
    found = preference_fidelity(
        [1.0, 0.2, -1.0, 0.5], [0.0, 0.3, -2.0, 0.4], [1.1, 0.4, -1.0, 0.3], [0.1, 0.1, -2.1, 0.5]
    )
    # pairs: agree (1>0, 1.1>0.1), flip (0.2<0.3 but 0.4>0.1), agree, flip (0.5>0.4 but 0.3<0.5)
    assert found["preference_agreement"] == 0.5 and found["flipped"] == 2
    assert math.isclose(found["max_abs_delta"], 0.2)  # |0.2-0.4|, |0.2-0.0|... the largest is 0.2
    assert math.isclose(found["flipped_max_fp32_margin"], 0.3)  # |0.4-0.1|; |0.3-0.5| = 0.2
    assert math.isclose(found["mean_abs_delta"], np.mean([0.1, 0.2, 0, 0.2, 0.1, 0.2, 0.1, 0.1]))


def test_fidelity_gate_passes_fp32_against_itself_and_reports_int8(tiny_model, int8_onnx):
    rows = tiny_model["rows"]
    unloaded = runtime_class("ort_python")(tiny_model["model"], tiny_model["onnx"], "cpu", 1, 512)
    fp32 = loaded(unloaded, lambda runtime: pair_scores(runtime, rows))
    assert fp32["ids"] == [r["id"] for r in rows] and len(fp32["rejected"]) == len(rows)
    same = fidelity_report(engine(tiny_model, "ort_python", graph="basic"), fp32, rows, 0.99)
    assert same["passed"] and same["preference_agreement"] == 1.0 and same["max_abs_delta"] < 1e-4
    int8 = fidelity_report(engine(tiny_model, "ort_python", onnx=int8_onnx), fp32, rows, 1.0)
    assert int8["pairs"] == len(rows) and len(int8["rejected_scores"]) == int8["pairs"]
    assert int8["passed"] == (int8["preference_agreement"] >= 1.0) and int8["max_abs_delta"] > 1e-6
    assert int8["fp32_scores"] == fp32["chosen"]
    with pytest.raises(RmbenchError, match="other rows"):
        fidelity_report(engine(tiny_model, "ort_python"), fp32, rows[::-1], 0.99)
    no_rejected = [{k: v for k, v in r.items() if k != "rejected"} for r in rows]
    with pytest.raises(RmbenchError, match="no 'rejected' reply"):
        fidelity_report(engine(tiny_model, "ort_python"), fp32, no_rejected, 0.99)


def test_native_engine_loads_the_int8_file_and_matches_ort_python(tiny_model, int8_onnx, binary):
    # Row by row in both: dynamic quantization scales each call's activations as a whole, so a
    # padded batch scores its rows differently from the rows alone.
    ort = engine(tiny_model, "ort_python", onnx=int8_onnx).time_rows_alone(pairs(tiny_model), 0)["scores"]
    native = engine(tiny_model, "native", onnx=int8_onnx, binary=str(binary))
    assert np.allclose(native.time_rows_alone(pairs(tiny_model), 0)["scores"], ort, atol=1e-4)


def test_variants_a_runtime_lacks_stop_the_config():
    config = {
        "models": {"e": {"architecture": "electra-large"}, "d": {"architecture": "deberta-v3-large"}},
        "studies": {
            "decomposition": {"models": ["e"], "runtimes": {"native": {"variants": [{"precision": "bf16"}]}}}
        },
    }
    with pytest.raises(RmbenchError, match="native: variant precision=bf16 is not supported"):
        check_variants(config)
    study = config["studies"]["decomposition"]
    study["runtimes"] = {"ort_python": {"variants": [{"graph": "basic"}, {"optimizer": "transformers"}]}}
    check_variants(config)
    study["models"] = ["e", "d"]  # DeBERTa's fused graph too (its attention is left unfused)
    check_variants(config)
    study["runtimes"] = {"native": {"variants": [{"precision": "int8", "matmuls": "attention"}]}}
    check_variants(config)
    study["runtimes"] = {"native": {"variants": [{"matmuls": "attention"}]}}
    with pytest.raises(RmbenchError, match="give it with precision: int8"):
        check_variants(config)
    study["runtimes"] = {"native": {"variants": [{"precision": "int8", "matmuls": "head"}]}}
    with pytest.raises(RmbenchError, match="variant matmuls=head is not supported"):
        check_variants(config)
    study["runtimes"] = {
        "torch_compile": {"variants": [{"freezing": "on", "precision": "bf16", "head": "fp32"}]}
    }
    check_variants(config)
    study["runtimes"] = {"hf_eager": {"variants": [{"head": "fp32"}]}}
    with pytest.raises(RmbenchError, match="give it with precision: bf16"):
        check_variants(config)
    study["runtimes"] = {"torch_compile": {"variants": [{"freezing": "on", "prepack": "off"}]}}
    check_variants(config)
    study["runtimes"] = {"torch_compile": {"variants": [{"prepack": "off"}]}}
    with pytest.raises(RmbenchError, match="give it with freezing: on"):
        check_variants(config)


def test_steps_name_runtime_and_variant():
    assert step_name("ort_python", {"set": "main60", "graph": "all", "precision": "int8"}) == (
        "ort_python graph=all precision=int8"
    )
    assert fp32_counterparts("ort_python graph=all precision=int8")[1] == "ort_python graph=all"
    assert fp32_counterparts("native precision=int8") == ["native precision=fp32", "native"]
    assert fp32_counterparts("ort_python graph=all precision=int8 matmuls=attention-ffn_in") == [
        "ort_python graph=all precision=fp32",
        "ort_python graph=all",
    ]
    assert fp32_counterparts("torch_compile freezing=on precision=bf16 head=fp32") == [
        "torch_compile freezing=on precision=fp32",
        "torch_compile freezing=on",
    ]
    record = {
        "cell": {
            "study": "decomposition",
            "model": "m",
            "device": "cpu",
            "runtime": "native",
            "params": "set~s+precision~int8",
            "launch": 1,
        },
        "settings": {"threads": 2},
        "status": "ok",
    }
    assert launch_row(record)["step"] == "native precision=int8"


def summary_row(step, p50, gflops=10.0):
    return {
        "model": "m",
        "device": "cpu",
        "set": "s",
        "step": step,
        "launches_ok": 3,
        "p50_ms": p50,
        "p50_ms_lo": p50 - 1,
        "p50_ms_hi": p50 + 1,
        "gflops": gflops,
    }


def test_gap_table_attributes_the_eager_to_ort_gap_by_hand():
    summary = pd.DataFrame(
        [
            summary_row("hf_eager precision=fp32", 100.0),
            summary_row("ort_python graph=disabled", 70.0),
            summary_row("ort_python graph=basic", 60.0),
            summary_row("ort_python graph=extended", 52.0),
            summary_row("ort_python graph=all", 50.0, gflops=40.0),
            summary_row("torch_compile freezing=off", 90.0),
            summary_row("torch_compile freezing=on", 80.0),
            summary_row("torch_compile freezing=on prepack=off", 77.0),
            summary_row("hf_eager precision=fp32 kernels=onednn", 95.0),
        ]
    )
    gap = gap_table(summary, "hf_eager precision=fp32", {"m": ("onnxruntime", 80.0)}).set_index("step")
    assert list(gap["share_of_gap"].round(2).fillna(-1)) == [-1, 0.6, 0.2, 0.16, 0.04, -1, -1, -1, -1]
    assert gap.loc["hf_eager precision=fp32 kernels=onednn", "saves_ms"] == 5.0  # against eager
    assert gap.loc["torch_compile freezing=on", "saves_ms"] == 10.0  # against compile without freezing
    assert gap.loc["torch_compile freezing=on prepack=off", "saves_ms"] == 3.0  # against freezing with it
    assert gap.loc["torch_compile freezing=off", "saves_ms"] == 10.0  # against eager
    assert gap.loc["ort_python graph=all", "fraction_of_ceiling"] == 0.5
    assert gap.loc["ort_python graph=all", "speedup_vs_eager"] == 2.0
    assert list(gap["path"]) == ["onnxruntime"] * 5 + ["onednn"] + ["torch.compile"] * 3


def test_gap_table_puts_the_relative_shift_export_after_ort_all():
    summary = pd.DataFrame(
        [
            summary_row("hf_eager precision=fp32", 100.0),
            summary_row("ort_python graph=all", 50.0),
            summary_row("ort_python graph=all optimizer=relative_shift", 40.0),
        ]
    )
    gap = gap_table(summary, "hf_eager precision=fp32").set_index("step")
    assert list(gap.index) == list(summary["step"])  # ORT all opens the rewrite's path, listed once
    shift = gap.loc["ort_python graph=all optimizer=relative_shift"]
    assert shift["path"] == "export rewrite" and shift["saves_ms"] == 10.0  # against ORT all, not eager
    assert shift["speedup_vs_eager"] == 2.5 and math.isnan(shift["share_of_gap"])


def test_gap_figure_draws_every_path(tmp_path):
    summary = pd.DataFrame(
        [
            summary_row("hf_eager precision=fp32", 100.0),
            summary_row("ort_python graph=disabled", 70.0),
            summary_row("ort_python graph=extended", 75.0),  # a step that costs: a red bar
            summary_row("torch_compile freezing=off", 90.0),
        ]
    )
    gap_figure(gap_table(summary, "hf_eager precision=fp32"), "s", tmp_path / "gap.pdf")
    assert (tmp_path / "gap.pdf").stat().st_size > 1000 and (tmp_path / "gap.png").stat().st_size > 1000
    gap_figure(pd.DataFrame(), "s", tmp_path / "empty.pdf")  # no launch succeeded: says so
    assert (tmp_path / "empty.pdf").exists()


def test_decomposition_figure_draws_both_ceilings(tmp_path):
    table = pd.DataFrame([summary_row("ort_python graph=all", 50.0, gflops=40.0)])
    table = table.assign(gflops_lo=30.0, gflops_hi=50.0, p50_ms_lo=49.0, p50_ms_hi=51.0)
    decomposition_figure(table, "s", tmp_path / "d.pdf", {"m": ("numpy", 80.0)}, {"m": 60.0})
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_the_operator_profile_splits_ort_time_by_operator_type(tiny_model):
    pairs_ = pairs(tiny_model)[:4]
    profile = operator_profile(tiny_model["onnx"], tiny_model["model"], pairs_, 1, warmup=1, max_length=512)
    shares = {o["op_type"]: o["share"] for o in profile["operators"]}
    assert profile["rows"] == 3 and math.isclose(sum(shares.values()), 1.0)
    assert "MatMul" in shares and 0 < profile["matrix_share"] < 1
    assert all(o["ms_per_row"] > 0 for o in profile["operators"])
    with pytest.raises(ValueError, match="none after 4 warm-up rows"):
        operator_profile(tiny_model["onnx"], tiny_model["model"], pairs_, 1, warmup=4, max_length=512)
    # each row alone and as 3 copies in turn: each run counted for its own batch size
    both = operator_profiles(tiny_model["onnx"], tiny_model["model"], pairs_, 1, 1, 512, (1, 3))
    assert both[1]["rows"] == 3 and both[3]["rows"] == 9 and both[3]["batch"] == 3
    for found in both.values():  # a run takes its kernels' time and some more
        assert found["run_ms_per_row"] > sum(o["ms_per_row"] for o in found["operators"])
    assert {o["op_type"] for o in both[1]["operators"]} == set(shares)  # the same graph
    # per row: a batch of copies is not 3 times a row's time (the per-run overhead is shared)
    per_row = {b: sum(o["ms_per_row"] for o in p["operators"]) for b, p in both.items()}
    assert 0 < per_row[3] < 3 * per_row[1]


def test_the_ceiling_profile_times_a_launchs_rows_between_two_probes(tiny_model):
    from rmbench.models.build import load_tokenizer, token_ids
    from rmbench.probes.roofline import ceiling_gap_parts, ceiling_profile, reached_share

    tokenizer = load_tokenizer(tiny_model["model"])
    rows = [
        r | {"tokens_tiny": len(token_ids(tokenizer, r["prompt"], r["response"]))} for r in tiny_model["rows"]
    ]
    record = ceiling_profile(tiny_model["onnx"], tiny_model["model"], rows[:4], "tiny", 1, 2, 512)
    profile, ceiling = record["profile"], record["ceiling"]
    assert profile["rows"] == 4  # 2 warm-up rows, then every row of the launch
    # the whole call holds session.run, which holds the kernels
    assert (
        profile["call_ms_per_row"]
        > profile["run_ms_per_row"]
        > sum(o["ms_per_row"] for o in profile["operators"])
    )
    assert ceiling["ceiling_gflops"] == max(ceiling["ceiling_probes_gflops"]) > 0
    assert (
        record["tokens"] == int(np.median([r["tokens_tiny"] for r in rows[:4]]))
        and record["gflop_per_row"] > 0
    )
    parts = ceiling_gap_parts(record, top=3)
    assert math.isclose(sum(p["ms_per_row"] for p in parts), profile["call_ms_per_row"])
    assert math.isclose(parts[0]["share"], reached_share(record)) and 0 < reached_share(record) < 1


def test_batch_operator_table_by_hand():
    def profile(batch, ms):
        return {"batch": batch, "operators": [{"op_type": op, "ms_per_row": v} for op, v in ms.items()]}

    profiles = {
        ("m", "none"): {
            1: profile(1, {"MatMul": 6.0, "Softmax": 1.0, "Gather": 0.5}),
            8: profile(8, {"MatMul": 6.0, "Softmax": 2.5, "Gather": 0.0, "Expand": 0.5}),
        },
        ("m", "relative_shift"): {
            1: profile(1, {"MatMul": 6.0}) | {"run_ms_per_row": 6.5},
            8: profile(8, {"MatMul": 6.0}) | {"run_ms_per_row": 7.8},
        },
    }
    table = batch_operator_table(profiles)
    stock = table[table.optimizer == "none"]
    rows = stock.set_index("op_type")
    # by |extra| (ties by name): Softmax +1.5, Expand +0.5 (a batch-only operator), Gather -0.5, MatMul 0
    assert list(stock.op_type) == ["Softmax", "Expand", "Gather", "MatMul", "total"]
    assert rows.loc["total", "ms_per_row_alone"] == 7.5 and rows.loc["total", "ms_per_row_batched"] == 9.0
    assert rows.loc["total", "ratio"] == pytest.approx(1.2)
    assert rows.loc["Softmax", "share_of_extra"] == pytest.approx(1.0) and rows.loc["Softmax", "ratio"] == 2.5
    assert rows.loc["Gather", "share_of_extra"] == pytest.approx(-1 / 3) and math.isnan(
        rows.loc["Expand", "ratio"]
    )
    assert bool(rows.loc["MatMul", "matrix_product"]) and not bool(rows.loc["Softmax", "matrix_product"])
    # an export whose batch changes nothing: ratio 1, no share of a zero change
    shifted = table[table.optimizer == "relative_shift"].set_index("op_type")
    assert shifted.loc["total", "ratio"] == 1.0 and math.isnan(shifted.loc["total", "share_of_extra"])
    # the whole session.run where profiled (between the kernels: 0.5 ms alone, 1.8 ms batched)
    assert list(shifted.index) == ["MatMul", "total", "session run"] and "session run" not in list(
        stock.op_type
    )
    assert shifted.loc["session run", "ratio"] == pytest.approx(1.2)
    latex = batch_operator_latex(table, top=2)
    assert "Softmax" in latex and "Expand" in latex and "Gather" not in latex and "total" in latex
    assert "+1.50" in latex and "batch of 8 copies" in latex and "relative shift" in latex
    with pytest.raises(ValueError, match="need batch 1 and one larger"):
        batch_operator_table({("m", "none"): {2: profile(2, {}), 8: profile(8, {})}})


def test_pytorch_batch_operators_with_the_work_of_the_weight_products_by_hand():
    def profile(batch, ms, work):
        operators = [{"op_type": op, "ms_per_row": v} for op, v in ms.items()]
        return {"batch": batch, "operators": operators, "call_ms_per_row": 1.1 * sum(ms.values())} | {
            "work_gflop_per_row": {"aten::addmm": work}
        }

    fused = "cpp_fused__softmax__to_copy_abs_add_arange_bitwise_and_clamp"
    profiles = {
        ("deberta", "torch_compile"): {
            1: profile(1, {"aten::addmm": 10.0, fused: 2.0}, 3.0),
            8: profile(8, {"aten::addmm": 6.0, fused: 2.5}, 2.4),
        }
    }
    table = batch_operator_table(profiles, by="runtime").set_index("op_type")
    assert "optimizer" not in table and set(table.runtime) == {"torch_compile"}
    # work 3.0 GFLOP in 10 ms alone (300 GFLOP/s), 2.4 in 6 ms batched (400): less work, faster rate
    assert table.loc["aten::addmm", "gflops_alone"] == pytest.approx(300)
    assert table.loc["aten::addmm", "gflops_batched"] == pytest.approx(400)
    assert math.isnan(table.loc[fused, "gflops_alone"])  # its work is not known
    assert table.loc["whole call", "ratio"] == pytest.approx(8.5 / 12)  # the score call, not a session
    assert "session run" not in table.index and bool(table.loc["aten::addmm", "matrix_product"])
    latex = batch_operator_latex(table.reset_index(), by="runtime")
    assert "tab:torch-batch-operators" in latex and "300 / 400" in latex and "torch.profiler" in latex
    assert fused not in latex and r"cpp\_fused\_\_softmax" in latex  # long kernel names shortened


def test_pytorch_operator_profiles_of_a_real_model(tiny_model):
    """torch.profiler on eager PyTorch: each row alone and as 3 copies, per row scored."""
    from rmbench.probes.torch_operators import operator_name, torch_operator_profiles

    runtime = runtime_class("hf_eager")(tiny_model["model"], None, "cpu", 1, 512)
    runtime.load()
    pairs = [(r["prompt"], r["response"]) for r in tiny_model["rows"][:4]]
    both = torch_operator_profiles(runtime, pairs, 1, (1, 3))
    assert both[1]["rows"] == 3 and both[3]["rows"] == 9 and both[3]["batch"] == 3
    for found in both.values():
        ops = {o["op_type"]: o["ms_per_row"] for o in found["operators"]}
        assert ops["aten::addmm"] > 0 and 0 < found["matrix_share"] < 1
        assert sum(o["share"] for o in found["operators"]) == pytest.approx(1.0)
        assert found["call_ms_per_row"] > 0
    with pytest.raises(ValueError, match="none after 4 warm-up rows"):
        torch_operator_profiles(runtime, pairs, 4, (1, 3))
    # Inductor's names, made comparable across the graphs of two batch shapes
    assert operator_name("graph_3_cpp_fused_gelu_view_3") == "cpp_fused_gelu_view"
    assert operator_name("graph_1_cpp_fused_gelu_view_12") == "cpp_fused_gelu_view"
    assert operator_name("## Call CompiledFxGraph fabc123 ##") == "Inductor graph call"
    assert operator_name("Torch-Compiled Region: 0/1") == "Torch-Compiled Region"
    assert operator_name("aten::addmm") == "aten::addmm"


def test_operator_table_keeps_the_top_types_and_sums_the_rest():
    ops = [("MatMul", 6.0), ("Add", 2.0), ("Softmax", 1.0), ("Gather", 1.0)]
    profile = {
        "operators": [{"op_type": op, "ms_per_row": ms, "share": ms / 10} for op, ms in ops],
        "matrix_share": 0.6,
    }
    table = operator_table({"m": profile}, top=2)
    assert list(table.op_type) == ["MatMul", "Add", "other (2 types)", "matrix products"]
    assert table.ms_per_row.iloc[2] == 2.0 and table.share.iloc[2] == pytest.approx(0.2)
    assert table.share.iloc[3] == 0.6 and math.isnan(table.ms_per_row.iloc[3])


def test_fidelity_table_joins_gate_and_speedups():
    report = {
        "model": "m",
        "runtime": "native",
        "params": "set~s+precision~int8",
        "pairs": 60,
        "preference_agreement": 0.95,
        "flipped": 3,
        "max_abs_delta": 0.4,
        "mean_abs_delta": 0.1,
        "fp32_median_margin": 0.8,
        "passed": False,
        "min_agreement": 0.99,
    }
    comparisons = pd.DataFrame(
        [
            {
                "model": "m",
                "device": "cpu",
                "set": "s",
                "metric": "p50_ms",
                "candidate": "native precision=int8",
                "baseline": base,
                "speedup": ratio,
                "speedup_conservative": ratio - 0.2,
                "verdict": "faster",
            }
            for base, ratio in (
                ("native precision=fp32", 1.4),
                ("ort_python graph=all", 1.5),
                ("native", 9.0),
            )
        ]
    )
    row = fidelity_table([report], comparisons, "s").iloc[0]
    assert row["gate"] == "failed" and row["step"] == "native precision=int8"
    assert row["speedup_vs_ort_fp32"] == 1.5 and row["conservative_vs_ort_fp32"] == 1.3
    assert row["vs_own_fp32"] == "native precision=fp32" and row["speedup_vs_own_fp32"] == 1.4
    assert row["headline"]
    # a set gated only (fidelity.sets): no comparison there, so no number is made up
    other = fidelity_table([report | {"params": "set~t+precision~int8"}], comparisons, "s").iloc[0]
    assert math.isnan(other["speedup_vs_ort_fp32"]) and other["verdict_vs_ort_fp32"] == ""
    assert not other["headline"]


NO_COMPARISONS = pd.DataFrame(
    columns=[
        "model",
        "device",
        "set",
        "metric",
        "candidate",
        "baseline",
        "speedup",
        "speedup_conservative",
        "verdict",
    ]
)


def _gate(set_name: str, ids: list[str], flips: set[str], min_agreement: float = 0.99) -> dict:
    """A gate report whose fp32 prefers every chosen reply; the variant turns `flips` around."""
    chosen = [-1.0 if i in flips else 1.0 for i in ids]
    agree = 1 - len(flips & set(ids)) / len(ids)
    return {
        "model": "m",
        "runtime": "native",
        "params": f"set~{set_name}+precision~int8",
        "ids": ids,
        "scores": chosen,
        "rejected_scores": [0.0] * len(ids),
        "fp32_scores": [1.0] * len(ids),
        "fp32_rejected_scores": [0.0] * len(ids),
        "pairs": len(ids),
        "preference_agreement": agree,
        "flipped": len(flips & set(ids)),
        "max_abs_delta": 2.0,
        "mean_abs_delta": 0.1,
        "fp32_median_margin": 1.0,
        "passed": agree >= min_agreement,
        "min_agreement": min_agreement,
    }


def test_the_pooled_gate_counts_each_distinct_pair_once():
    a = [f"a{i}" for i in range(60)]
    b = [f"b{i}" for i in range(99)] + ["a0"]  # a row drawn into both sets
    # one flip in each set, the shared row's in both: 2 distinct flips of 159 distinct pairs
    gates = [_gate("s", a, {"a0"}), _gate("t", b, {"a0", "b5"}), _gate("t", b, set()) | {"runtime": "x"}]
    table = fidelity_table(gates, NO_COMPARISONS, "s")
    native = table[table["step"] == "native precision=int8"]
    assert list(native["set"]) == ["s", "t", POOLED_SET]  # the headline first, the pool last
    pooled = native.iloc[-1]
    assert pooled["pairs"] == 159 and pooled["flipped"] == 2 and not pooled["headline"]
    assert pooled["preference_agreement"] == pytest.approx(157 / 159) and pooled["gate"] == "failed"
    assert pooled["agreement_lo"] < 157 / 159 < pooled["agreement_hi"]
    assert math.isnan(pooled["speedup_vs_ort_fp32"])  # a pool is not timed
    # a variant gated on one set has no pool; nor is a pool made of two runtimes' gates
    assert (table[table["step"] != "native precision=int8"]["set"] == "t").all()
    # at 99%, the one shared flip fails 60 pairs but passes 100 and the pool's 159
    passing = fidelity_table([_gate("s", a, {"a0"}), _gate("t", b, {"a0"})], NO_COMPARISONS, "s")
    assert list(passing["gate"]) == ["failed", "passed", "passed"]
    # the paper's table: the timed set's gate and the pool; the caption names the pooled sets
    latex = fidelity_latex(table, 0.99)
    assert "pooled" in latex and "Pooled: the distinct pairs of s, t together" in latex


def test_transformers_optimizer_fuses_and_keeps_scores(tiny_model, reference, tmp_path, binary):
    from rmbench.export.onnx import optimize_for_transformers, parity_failure, parity_report

    fused_onnx = tmp_path / "model.opt.onnx"
    fused = optimize_for_transformers(tiny_model["onnx"], fused_onnx, tiny_model["model"])
    # an ELECTRA encoder is BERT-like: its one layer's attention, both residual layer norms, the
    # feed-forward's bias and GELU, and the embeddings' layer norm, each one fused operator
    assert (fused["Attention"], fused["SkipLayerNormalization"], fused["BiasGelu"]) == (1, 2, 1), fused
    assert fused["EmbedLayerNormalization"] == 1
    # both engines load the fused graph (ONNX Runtime's contrib operators) and score as PyTorch
    for runtime, options in (("ort_python", {}), ("native", {"binary": str(binary)})):
        scores = engine(tiny_model, runtime, onnx=fused_onnx, **options).score(pairs(tiny_model))
        assert np.allclose(scores, reference, atol=1e-4), runtime
    # its parity gate, rows alone and in padded batches, with the numbers
    report = parity_report(tiny_model["model"], fused_onnx, tiny_model["rows"], reference, 1e-4, 4, 1, 0.0)
    assert report["passed"] and parity_failure(report) is None
    assert max(report["max_abs_err_single"], report["max_abs_err_batched"]) <= 1e-4
    strict = parity_report(tiny_model["model"], fused_onnx, tiny_model["rows"], reference, 1e-12, 4, 1, 0.0)
    assert not strict["passed"] and "parity gate failed" in parity_failure(strict)


def test_a_launch_of_an_export_that_failed_its_gate_is_a_mismatch_not_timed(tiny_model, reference):
    from rmbench.studies.launch import run_launch

    gate = {"onnx": "model.opt.onnx", "model_dir": "m", "passed": False, "tolerance": 1e-4}
    gate |= {"max_abs_err_single": 0.5, "max_abs_err_batched": 6.75, "batch_size": 8, "worst_row": "r1"}
    gate |= {"reference_score_std": 1.0, "min_score_std": 0.01}
    cell = {"study": "latency", "model": "tiny", "device": "cpu", "runtime": "ort_python"}
    cell |= {"params": "set~t+optimizer~transformers", "launch": 1}
    settings = {"threads": 1, "max_length": 512, "warmup_rows": 1, "timeout_s": 60, "tolerance": 1e-4}
    args = (cell, tiny_model["rows"], reference, tiny_model["model"], tiny_model["onnx"], settings, {})
    record = run_launch(*args, gate)
    assert record["status"] == "mismatch" and record["metrics"] == {}  # no runtime loaded, nothing timed
    assert "6.75 (batches of 8) > tolerance 0.0001" in record["reason"]
    assert run_launch(*args, gate | {"passed": True})["status"] == "ok"


def test_the_latency_tables_name_a_runtime_with_its_own_export_as_a_runtime_of_its_own():
    record = {
        "cell": {"study": "latency", "model": "m", "device": "cpu", "runtime": "native"},
        "settings": {"threads": 2},
        "status": "ok",
    }
    fused = record | {"cell": record["cell"] | {"params": "set~s+optimizer~transformers", "launch": 1}}
    row = launch_row(fused)
    assert (row["runtime"], row["variant"], row["set"]) == ("native optimizer=transformers", "-", "s")
    plain = launch_row(record | {"cell": record["cell"] | {"params": "set~s", "launch": 1}})
    assert (plain["runtime"], plain["variant"]) == ("native", "-")
    # other studies keep a variant a variant
    batching = fused | {"cell": fused["cell"] | {"study": "batching"}}
    assert (launch_row(batching)["runtime"], launch_row(batching)["variant"]) == (
        "native",
        "optimizer~transformers",
    )


def test_onnx_file_per_variant_and_the_combination_not_built():
    from rmbench.export.onnx_files import onnx_file

    assert onnx_file("m") == "results/onnx/m/model.onnx"
    assert onnx_file("m", "int8") == "results/onnx/m/model.int8.onnx"
    assert onnx_file("m", optimizer="transformers") == "results/onnx/m/model.opt.onnx"
    assert onnx_file("m", optimizer="relative_shift") == "results/onnx/m/model.relshift.onnx"
    for optimizer in ("transformers", "relative_shift"):
        with pytest.raises(RmbenchError, match="not built"):
            onnx_file("m", "int8", optimizer)
    assert onnx_file("m", "int8", matmuls="attention") == "results/onnx/m/model.int8.attention.onnx"
    with pytest.raises(RmbenchError, match="chooses what int8 quantizes"):
        onnx_file("m", "fp32", matmuls="attention")
    config = {
        "studies": {
            "decomposition": {
                "runtimes": {"native": {"variants": [{"precision": "int8", "optimizer": "transformers"}]}}
            }
        }
    }
    with pytest.raises(RmbenchError, match="use one of them per variant"):
        check_variants(config)


def test_the_thread_probe_times_each_setting_alone_and_batched(tiny_model):
    from rmbench.probes.thread_probe import setting_name, thread_probe, thread_table
    from rmbench.report.latex import thread_latex

    settings = [
        {"intra_op_threads": 0, "execution": "sequential", "inter_op_threads": 1},
        {"intra_op_threads": 1, "execution": "parallel", "inter_op_threads": 2},
    ]
    assert [setting_name(s) for s in settings] == ["intra_all-sequential-inter_1", "intra_1-parallel-inter_2"]
    pairs_ = pairs(tiny_model)[:4]
    results = thread_probe(tiny_model["onnx"], tiny_model["model"], pairs_, settings, 1, 3, 1, 512)
    assert [r["name"] for r in results] == ["intra_all-sequential-inter_1", "intra_1-parallel-inter_2"]
    assert all(
        r["rows"] == 6 and r["batch"] == 3 and r["threads_used"] == 1 for r in results
    )  # 3 rows x 2 passes
    assert all(r["alone_ms_per_row"] > 0 and r["batched_ms_per_row"] > 0 for r in results)
    with pytest.raises(ValueError, match="none after 4 warm-up rows"):
        thread_probe(tiny_model["onnx"], tiny_model["model"], pairs_, settings, 1, 3, 4, 512)
    table = thread_table({"tiny": results})
    first = table.iloc[0]
    assert first["alone_vs_reference"] == 1.0 and first["batched_vs_reference"] == 1.0
    assert first["batched_vs_alone"] == pytest.approx(
        results[0]["batched_ms_per_row"] / results[0]["alone_ms_per_row"]
    )
    assert "intra\\_1-parallel-inter\\_2" in thread_latex(table) and "batch of 3 copies" in thread_latex(
        table
    )


def test_the_thread_probe_numbers_for_the_paper():
    from rmbench.probes.thread_probe import thread_table
    from rmbench.report.paper import paper_numbers

    def result(name, alone, batched):
        return {"name": name, "threads_used": 2, "batch": 8, "rows": 24} | {
            "alone_ms_per_row": alone,
            "batched_ms_per_row": batched,
        }

    table = thread_table(
        {
            "electra": [
                result("intra_all-sequential-inter_1", 90.0, 84.0),
                result("intra_1-sequential-inter_1", 162.0, 168.0),
            ]
        }
    )
    numbers = paper_numbers({"batch_threads": table}, {})
    assert numbers["batch_threads/electra/intra_all-sequential-inter_1/batched_vs_alone"] == "0.93"
    assert numbers["batch_threads/electra/intra_1-sequential-inter_1/alone_vs_reference"] == "1.80"
    assert numbers["batch_threads/electra/intra_1-sequential-inter_1/batched_vs_reference"] == "2.00"
    assert numbers["batch_threads/electra/batch"] == "8"


def test_an_unknown_execution_mode_is_refused(tiny_model):
    from rmbench.export.onnx import ort_session

    with pytest.raises(ValueError, match="sequential, parallel"):
        ort_session(tiny_model["onnx"], 1, execution="concurrent")
