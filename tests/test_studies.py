"""What each tier's config writes, from the study registry (rmbench.plan.studies), without Snakemake."""

from rmbench.plan.cells import (
    cell_settings,
    cell_table,
    format_params,
    gated_params,
    headline_set,
    study_baseline,
)
from rmbench.plan.studies import ceiling_probe_runs, engine_export, findings_tables, output_paths
from rmbench.stats.sequential import block_launch_paths, counts_at_look, sequential_blocks
from test_cells import tier_config


def enabled(config: dict) -> set[str]:
    return {cell["study"] for cell in cell_table(config) if cell["launch"] <= cell["minimum"]}


def test_the_paper_tier_writes_each_studys_table_and_the_latency_studys_derived_tables():
    config = tier_config(extended=False)
    studies = enabled(config)
    assert studies == {"latency", "tokenizer", "zerocopy", "compile", "batching", "concurrency"}
    paths = output_paths(config, studies)
    for study in studies:
        assert {f"paper/tables/{study}.tex", f"paper/tables/{study}.csv"} <= set(paths)
    assert {
        "paper/tables/language.tex",
        "paper/tables/replication.tex",
        "paper/tables/best_runtime.tex",
        "paper/tables/ceiling_gap.tex",
        "paper/figures/latency.pdf",
        "paper/figures/batching.pdf",
        "paper/tables/batching_verdicts.csv",
        "paper/figures/concurrency.pdf",
    } <= set(paths)
    assert output_paths(config, studies, extended_only=True) == []
    assert len(paths) == len(set(paths))


def test_the_extended_tier_adds_its_own_studies_and_probes():
    config = tier_config(extended=True)
    studies = enabled(config)
    own = output_paths(config, studies, extended_only=True)
    assert set(own) == {
        *(
            f"paper/tables/{s}.{ext}"
            for s in ("colocation", "load", "decomposition", "gemm")
            for ext in ("tex", "csv")
        ),
        "paper/tables/roofline.tex",
        "paper/tables/batch_operators.tex",
        "paper/tables/torch_batch_operators.tex",
        "paper/tables/batch_threads.tex",
        "paper/tables/decomposition_gap.tex",
        "paper/tables/fidelity.tex",
        "paper/tables/ort_operators.tex",
        "paper/figures/decomposition_gap.pdf",
        "paper/tables/int8_sweep.tex",
    }
    assert set(own) < set(output_paths(config, studies))


def test_a_probe_left_out_of_the_config_writes_no_table():
    config = tier_config(extended=True)
    del config["studies"]["batching"]["thread_probe"]
    config["studies"]["batching"]["operator_profile"]["torch_runtimes"] = ["nope"]
    config["quantization_sweep"]["models"] = []
    paths = output_paths(config, enabled(config))
    assert "paper/tables/batch_operators.tex" in paths
    assert not {"paper/tables/batch_threads.tex", "paper/tables/torch_batch_operators.tex"} & set(paths)
    assert "paper/tables/int8_sweep.tex" not in paths


def test_the_ceiling_gap_needs_the_latency_studys_probe_on_the_cpu():
    config = tier_config(extended=False)
    # what both engines load (config.yaml: each family's own)
    assert [engine_export(config, m) for m in ("deberta", "electra", "qwen3")] == [
        "multihead_attention", "transformers", "none",
    ]  # fmt: skip
    config["studies"]["latency"]["ceiling_probe"] = False
    assert "paper/tables/ceiling_gap.tex" not in output_paths(config, enabled(config))
    config["studies"]["latency"] |= {"ceiling_probe": True, "devices": ["cuda"]}
    assert not ceiling_probe_runs(config)
    del config["studies"]["latency"]["runtimes"]["native"]["options"]
    assert engine_export(config, "deberta") == "none"  # the native engine's, ORT-Python's aside


def test_the_findings_page_reads_the_verdict_tables_of_the_studies_that_run():
    config = tier_config(extended=False)
    assert sorted(findings_tables(config, enabled(config))) == [
        f"paper/tables/{name}.csv"
        for name in (
            "batching_verdicts",
            "best_runtime",
            "compile",
            "concurrency_verdicts",
            "language",
            "latency",
            "replication",
            "tokenizer",
            "zerocopy",
        )
    ]
    del config["studies"]["latency"]["runtimes"]["ort_python"]
    assert "paper/tables/language.csv" not in findings_tables(config, enabled(config))


def test_a_looks_launch_counts_grow_by_step_for_each_look_that_extended_them_up_to_the_cap():
    limits = {"a": (3, 9), "b": (3, 5), "c": (2, 2)}
    assert counts_at_look(limits, 3, []) == {"a": 3, "b": 3, "c": 2}
    assert counts_at_look(limits, 3, [["a", "b"]]) == {"a": 6, "b": 5, "c": 2}
    assert counts_at_look(limits, 3, [["a", "b"], ["a", "b", "c"], ["a"]]) == {"a": 9, "b": 5, "c": 2}


def test_a_studys_baseline_is_its_configured_one_else_its_first_variant_or_step():
    config = tier_config(extended=True)
    assert study_baseline(config, "latency") == "hf_eager"
    first = config["studies"]["batching"]["variants"][0]
    assert study_baseline(config, "batching") == format_params(first)
    assert study_baseline(config, "decomposition").split()[0] == next(
        iter(config["studies"]["decomposition"]["runtimes"])
    )
    assert study_baseline(tier_config(extended=False), "decomposition") is None  # not in the tier
    assert headline_set(config, "latency") == config["studies"]["latency"]["sets"][0]


def test_the_sequential_blocks_are_those_with_a_cap_above_a_cells_minimum():
    config = tier_config(extended=False)
    launches = cell_table(config)
    blocks = sequential_blocks(launches)
    latency = ("latency", "deberta", "cpu", "main60")
    assert latency in blocks and blocks[latency]["native/set~main60"] == (3, 9)
    assert blocks[latency]["fastapi/set~main60"] == (3, 3)  # in the block, at its minimum
    assert not any(block[2] == "cuda" for block in blocks)  # no GPU cap in the paper tier
    # every launch path of a block's counts is one of the cell table's
    paths = block_launch_paths(latency, {k: cap for k, (_, cap) in blocks[latency].items()})
    assert set(paths) <= {cell["path"] for cell in launches}
    assert len(paths) == sum(cap for _, cap in blocks[latency].values())


def test_a_launchs_settings_carry_only_what_its_study_uses():
    config = tier_config(extended=True)
    cell = {"study": "latency", "model": "deberta", "device": "cpu", "runtime": "native"}
    settings = cell_settings(config, cell | {"params": "set~main60"}, 2, None)
    assert settings["threads"] == 2 and "generator" not in settings
    assert settings["tolerance"] == config["parity"]["tolerance"]
    assert settings["ceiling_probe"] is True
    gpu = cell_settings(config, cell | {"device": "cuda", "params": "set~main60"}, 2, None)
    assert gpu["tolerance"] == config["parity"]["gpu_tolerance"]
    int8 = {"study": "decomposition", "model": "electra", "device": "cpu", "runtime": "ort_python"}
    int8_settings = cell_settings(config, int8 | {"params": "set~main60+precision~int8"}, 2, "why")
    assert int8_settings["tolerance"] == config["fidelity"]["launch_tolerance"]
    assert int8_settings["unsupported"] == "why"
    assert gated_params(config, "set~main60+precision~int8")[0] == "set~main60+precision~int8"
