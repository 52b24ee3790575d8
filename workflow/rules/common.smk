# Config validation, the cell table and the input functions every stage shares.
import json
import os
import re
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# The rules use the rmbench package too (scripts import it through scripts/_bootstrap.py).
sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from rmbench.plan.cells import (
    CELL_PATH,
    cell_settings as launch_settings,
    cell_table,
    check_references,
    drop_removed_runtimes,
    comparison_block,
    headline_set as study_headline_set,
    launch_priorities,
    runtime_options,
    study_baseline as baseline_of,
    study_config as config_of,
)
from rmbench.plan import inputs
from rmbench.plan.resources import job_mem_mb
from rmbench.models.families import check_models, family
from rmbench.plan.inputs import FIDELITY_PATH, FP32_SCORES_PATH, WARM_CACHE_PATH
from rmbench.report.figures import FIGURES
from rmbench.report.paper import text_files as paper_text_files
from rmbench.export.onnx_files import MATMUL_GROUPS, ONNX_OPTIMIZERS, onnx_file
from rmbench.export.precision import sweep_settings, timed_settings
from rmbench.report.caveat import set_caveat
from rmbench.probes.provenance import set_onnxruntime_telemetry
from rmbench.plan.scheduling import one_pending_timer
from rmbench.stats.sequential import (
    LOOK_PATH,
    block_launch_paths,
    counts_at_look,
    sequential_blocks,
)
from rmbench.runtimes import (
    check_runtimes,
    check_variants,
    runtime_class,
)
from rmbench.plan.studies import (
    LANGUAGE_PAIR,
    ceiling_probe_runs,
    engine_export,
    findings_tables as study_findings_tables,
    operator_profile_settings,
    output_paths,
    runs_thread_probe,
    torch_profile_runtimes,
)

drop_removed_runtimes(config)
validate(config, workflow.source_path("../schemas/config.schema.yaml"))
check_references(config)
check_models(config)
check_runtimes(config)
check_variants(config)

# Else Snakemake's scheduler takes up to half a core from the launches (see rmbench/plan/scheduling.py).
one_pending_timer()

# Every job inherits it (a cluster job parses this file again): no telemetry thread in a timed
# process unless the config asks for one.
set_onnxruntime_telemetry(config["onnxruntime_telemetry"])
set_caveat(config["caveat"])

# Every launch up to each cell's cap; CELLS are the launches every run makes (each cell's
# minimum), the rest run only while their block's comparisons stay undecided (SEQUENTIAL_BLOCKS).
ALL_LAUNCHES = cell_table(config)
CELLS = [cell for cell in ALL_LAUNCHES if cell["launch"] <= cell["minimum"]]
PRIORITIES = launch_priorities(ALL_LAUNCHES, config["launch"]["order_seed"])
# Data, models, exports, builds and gates run before any launch, so that every runtime's
# launches become ready together and can take turns.
SETUP_PRIORITY = len(PRIORITIES) + 1
# A launch's wall-clock limit is the launch timeout plus setup (its memory: job_memory).
CELL_RUNTIME_MIN = int(config["launch"]["timeout_s"] // 60) + 10
SWEEP_SETTINGS = sweep_settings(config)  # int8 settings of the quantization sweep, by name
NATIVE_SOURCES = sorted(  # relative, so that a storage provider maps them like every other input
    os.path.relpath(p, workflow.basedir)
    for p in Path(workflow.basedir, "native").rglob("*")
    if p.is_file() and "build" not in p.parts
)


wildcard_constraints:
    model="|".join(map(re.escape, config["models"])),
    set="|".join(map(re.escape, config["sets"])),
    study="|".join(config["studies"]),  # the config's studies: a cell of another has no rule
    device=r"cpu|cuda",
    runtime=r"[a-z_]+",
    params=r"[^/]+",
    launch=r"\d+",
    matmuls="|".join(map(re.escape, MATMUL_GROUPS)),
    optimizer="|".join(ONNX_OPTIMIZERS),


def model_cfg(name):
    return config["models"][name] | {"name": name}


def job_memory(job):
    """A rule's mem_mb: what a `job` (rmbench.plan.resources.WEIGHT_COPIES) on its model needs."""
    return lambda wildcards: job_mem_mb(model_cfg(wildcards.model), job)


def used_models():
    return sorted({cell["model"] for cell in CELLS})


def study_baseline(study):
    return baseline_of(config, study)


def study_config(study):
    return config_of(config, study)


def headline_set(study):
    return study_headline_set(config, study)


def export_operators(wildcards):
    """The native engine's operator library where a profile loads an export that calls it: the
    rule's optimizer wildcard, else the export the latency study's engines load."""
    return inputs.operator_library(
        wildcards.get("optimizer") or engine_export(config, wildcards.model)
    )


def headline_rows(study):
    """The rows of a study's headline set (what its one-process probes score)."""
    return f"results/data/{headline_set(study)}.jsonl"


def enabled_studies():
    return sorted({cell["study"] for cell in CELLS})


def native_models():
    """The models the native engine scores (a family it has no tokenizer for has none)."""
    return sorted({cell["model"] for cell in CELLS if inputs.runs_native_engine(config, cell)})


def study_outputs():
    """The enabled studies' tables and figures (rmbench.plan.studies), and their sequential tables."""
    outputs = output_paths(config, set(enabled_studies()))
    return outputs + [path for study in enabled_studies() for path in sequential_table(study)]


def findings_tables(wildcards):
    """The tables whose verdicts paper/tables/findings.md words, for the studies that run."""
    return study_findings_tables(config, set(enabled_studies()))


def extended_outputs(wildcards):
    """The extended tier's own outputs; the paper tier's config has none, so asking for them is a
    mistake worth a clear message."""
    if config["tier"] != "extended":
        raise WorkflowError(
            "`extended` needs the extended tier's config: snakemake --workflow-profile "
            "workflow/profiles/extended --cores 1 extended (its `all` runs both tiers)"
        )
    return output_paths(config, set(enabled_studies()), extended_only=True)


def decomposition_inputs(wildcards):
    return inputs.decomposition_inputs(config, CELLS, set(enabled_studies()))


def configured(what, present):
    """Stops a run that asks for a probe's table where the config has no such probe."""
    if not present:
        raise WorkflowError(f"this config has no {what} on the CPU (see the extended profile)")


def batch_operator_inputs(wildcards):
    """ORT's operator profiles per model of the batching study, rows alone and batched."""
    profile = operator_profile_settings(config)
    configured("studies.batching.operator_profile", profile)
    return {
        "profiles": expand(
            "results/batching/operators/{model}/{optimizer}.json",
            model=study_config("batching")["models"],
            optimizer=profile["optimizers"],
        )
    }


def torch_batch_operator_inputs(wildcards):
    """torch.profiler's operator profiles per model and PyTorch runtime of the batching study,
    rows alone and batched."""
    configured("studies.batching.operator_profile.torch_runtimes", torch_profile_runtimes(config))
    return {
        "profiles": expand(
            "results/batching/torch_operators/{model}/{runtime}.json",
            model=study_config("batching")["models"],
            runtime=torch_profile_runtimes(config),
        )
    }


def study_runtime_options(study, runtime):
    return runtime_options(config, study, runtime)


def ceiling_gap_inputs(wildcards):
    """The latency study's CPU models' operator profiles against the ceiling, and its best
    runtimes (their share of the ceiling measured in launches)."""
    configured("studies.latency.ceiling_probe", ceiling_probe_runs(config))
    return {
        "profiles": expand(
            "results/latency/operators/{model}.json",
            model=sorted(
                {c["model"] for c in CELLS if c["study"] == "latency" and c["device"] == "cpu"}
            ),
        ),
        "best": "paper/tables/best_runtime.csv",
    }


def batch_thread_inputs(wildcards):
    """The thread probe per model of the batching study."""
    configured("studies.batching.thread_probe", runs_thread_probe(config))
    return {
        "probes": expand(
            "results/batching/threads/{model}.json", model=study_config("batching")["models"]
        )
    }


def figure_studies():
    """The enabled studies with a figure: the analysis notebook recomputes and draws these."""
    return [study for study in enabled_studies() if study in FIGURES]


def notebook_parameters():
    """What the notebook's parameters cell receives."""
    return {
        "tables": "results/tables",
        "paper_tables": "paper/tables",
        "out": "results/notebook",
        "studies": figure_studies(),
        "headline_sets": {s: headline_set(s) for s in figure_studies()},
    }


# The paper's text (main.tex, then its sections), relative to the checkout.
PAPER_TEXT = [str(p.relative_to(workflow.basedir)) for p in paper_text_files(workflow.basedir)]


def paper_targets(wildcards):
    """Tables, figures and the numbers the text quotes; the PDF only where latexmk exists."""
    targets = [*study_outputs(), "paper/tables/numbers.tex", "paper/tables/findings.md"]
    if shutil.which("latexmk"):
        return [*targets, "paper/main.pdf"]
    print(
        "paper: latexmk not found, so the PDF is not built; tables, figures and numbers are. "
        "Install it (`bash envs/setup.sh --paper`, Debian's TeX packages) and run "
        "`snakemake --cores 1 paper` again.",
        file=sys.stderr,
    )
    return targets


def threads():
    return config["threads"] or len(os.sched_getaffinity(0))


def source_split():
    """The hh-rlhf split that sample sets are drawn from."""
    source = config["data"]["source"]
    if source == "local":
        return config["data"]["local_path"]
    return f"results/data/source/{source}.jsonl"


def tokenizer_inputs(wildcards):
    return inputs.tokenizer_inputs(config, wildcards.model)


def stand_in_inputs(wildcards):
    return inputs.synthetic_inputs(config, wildcards.model)


def matmul_parts(wildcards):
    """The model family's MatMul parts by node name (what an int8 group quantizes)."""
    return family(model_cfg(wildcards.model)["architecture"])["matmul_parts"]


def sweep_setting(wildcards):
    """The int8 settings a sweep file name stands for (only the configured ones)."""
    if wildcards.settings not in SWEEP_SETTINGS:
        raise ValueError(
            f"{wildcards.settings} is not a quantization_sweep setting of this config; its settings: "
            + ", ".join(SWEEP_SETTINGS)
        )
    return SWEEP_SETTINGS[wildcards.settings]


def unsupported_reason(wildcards):
    return inputs.unsupported_reason(config, dict(wildcards.items()))


def fidelity_inputs(wildcards):
    return inputs.fidelity_inputs(config, dict(wildcards.items()))


def cell_inputs(wildcards):
    return inputs.cell_inputs(config, dict(wildcards.items()))


def timed_cell_inputs(wildcards):
    return inputs.timed_cell_inputs(config, dict(wildcards.items()))


def generator_config():
    """The co-location study's generator settings (the schema fills the defaults)."""
    return config["studies"]["colocation"]["generator"]


def torch_gpu_cells():
    """The GPU cells whose runtime scores with PyTorch (not ONNX Runtime or the native engine),
    with its options as the launch gets them (a service may wrap another runtime)."""
    return [
        cell["path"]
        for cell in CELLS
        if cell["device"] == "cuda"
        and runtime_class(cell["runtime"]).needs_torch(
            runtime_options(config, cell["study"], cell["runtime"], cell["params"])
        )
    ]


def warm_cache_priority(wildcards):
    """Just before the first launch of its block, so the block's launches stay together."""
    block = comparison_block(dict(wildcards.items()))
    return 1 + max(PRIORITIES[c["path"]] for c in CELLS if comparison_block(c) == block)


def launch_priority(wildcards):
    """Interleaves launches across runtimes (see rmbench.plan.cells.launch_priorities)."""
    return PRIORITIES.get(CELL_PATH.format(**wildcards), 0)


def cell_settings(wildcards):
    """What a launch needs besides its inputs (rmbench.plan.cells.cell_settings)."""
    return launch_settings(
        config, dict(wildcards.items()), threads(), unsupported_reason(wildcards)
    )


def all_cores(wildcards):
    """Every core Snakemake was given; a function, so that commands given no --cores (--unlock,
    --report) do not need them."""
    return workflow.cores


# The blocks whose cells run in looks: {block: {cell key: (minimum, cap)}} (rmbench.stats.sequential).
SEQUENTIAL_BLOCKS = sequential_blocks(ALL_LAUNCHES)


def block_wildcards(block):
    return dict(zip(("study", "model", "device", "set"), block))


def look_decision_file(block, look):
    """A look's decision, made first if it is not there (a checkpoint: the DAG grows from it)."""
    job = checkpoints.sequential_look.get(**block_wildcards(block), look=look)
    with open(job.output[0]) as f:
        return json.load(f)


def launch_counts(block, look):
    """Each cell's launches at a look, from the earlier looks' decisions."""
    extended = [look_decision_file(block, earlier)["extend"] for earlier in range(1, look)]
    return counts_at_look(
        SEQUENTIAL_BLOCKS[block], config["launch"]["sequential"]["step"], extended
    )


def final_look(block):
    """The look after which no cell of the block gets more launches."""
    look = 1
    while look_decision_file(block, look)["extend"]:
        look += 1
    return look


def look_inputs(wildcards):
    """A look's launches: those the earlier looks asked for."""
    block = tuple(wildcards[k] for k in ("study", "model", "device", "set"))
    return block_launch_paths(block, launch_counts(block, int(wildcards.look)))


def look_settings(wildcards):
    block = tuple(wildcards[k] for k in ("study", "model", "device", "set"))
    return {
        "baseline": study_baseline(wildcards.study),
        "limits": {k: list(limits) for k, limits in SEQUENTIAL_BLOCKS[block].items()},
        "margin": config["stats"]["equivalence_margin"],
    } | config["launch"]["sequential"]


def look_priority(wildcards):
    """Right after its block's launches, before the next block's."""
    block = tuple(wildcards[k] for k in ("study", "model", "device", "set"))
    return max(PRIORITIES[c["path"]] for c in ALL_LAUNCHES if comparison_block(c) == block)


def study_launches(study):
    """A study's launches: every cell's minimum, and in sequential blocks the launches their
    looks added."""
    paths = [
        cell["path"]
        for cell in CELLS
        if cell["study"] == study and comparison_block(cell) not in SEQUENTIAL_BLOCKS
    ]
    for block in SEQUENTIAL_BLOCKS:
        if block[0] == study:
            paths += block_launch_paths(block, launch_counts(block, final_look(block)))
    return paths


def sequential_table(study):
    """A study's sequential table (the design's verdicts), where it has sequential blocks."""
    if any(block[0] == study for block in SEQUENTIAL_BLOCKS):
        return [f"results/tables/{study}/sequential.csv"]
    return []


def study_looks(wildcards):
    """Every look of each sequential block of a study, up to its final one (its decisions)."""
    return [
        LOOK_PATH.format(**block_wildcards(block), look=look)
        for block in SEQUENTIAL_BLOCKS
        if block[0] == wildcards.study
        for look in range(1, final_look(block) + 1)
    ]


def study_launch_files(wildcards):
    return study_launches(wildcards.study)


LAUNCH_RUNTIMES = {cell["path"]: cell["runtime"] for cell in ALL_LAUNCHES}


def language_cells(wildcards):
    """The latency launches of the language table's two runtimes (their per-row latencies)."""
    return [path for path in study_launches("latency") if LAUNCH_RUNTIMES[path] in LANGUAGE_PAIR]
