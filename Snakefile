# rmbench: how fast reward models score in RLHF, runtime against runtime.
# Thin on purpose: the stages live in workflow/rules/, the work in workflow/rmbench/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/native.smk"
include: "workflow/rules/precision.smk"
include: "workflow/rules/bench.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/advise.smk"


rule all:
    default_target: True
    input:
        expand("results/correctness/{model}.json", model=used_models()),
        expand("results/correctness/{model}_native.json", model=native_models()),
        study_outputs(),
        "paper/tables/findings.md",
        ["results/notebook/analysis.ipynb"] if figure_studies() else [],


rule extended:
    """The studies past the paper (decomposition, int8 sweep, GEMM ceiling and roofline, batch
    profiles): under the extended profile, whose `all` includes them too."""
    input:
        extended_outputs,


rule paper:
    """Regenerates the paper's tables, figures and quoted numbers from the recorded launches (no
    benchmark reruns unless a launch is missing), and the PDF where latexmk exists."""
    input:
        paper_targets,


rule cells:
    """Every benchmark launch of the config, without the analysis."""
    input:
        [cell["path"] for cell in CELLS],


rule gpu:
    """Only the GPU cells, so one short visit to a GPU machine produces them all; `all` afterwards
    rebuilds the tables from them (see README, "GPU cells")."""
    input:
        [cell["path"] for cell in CELLS if cell["device"] == "cuda"],


rule gpu_torch:
    """The GPU cells of the runtimes that run on PyTorch alone: what a GPU machine without
    onnxruntime-gpu or the native build can measure (envs/gpu-visit.sh, README "GPU cells")."""
    input:
        torch_gpu_cells(),
