# Config validation, the cell table and the input functions every stage shares.
import os
import sys
from pathlib import Path

from snakemake.utils import validate

# The rules use the rmbench package too (scripts import it through scripts/_bootstrap.py).
sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))

from rmbench.cells import CELL_PATH, cell_table, check_references, parse_params

validate(config, workflow.source_path("../schemas/config.schema.yaml"))
check_references(config)

CELLS = cell_table(config)


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    set=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    study=r"[a-z_]+",
    device=r"cpu|cuda",
    runtime=r"[a-z_]+",
    params=r"[^/]+",
    launch=r"\d+",


def model_cfg(name):
    return config["models"][name] | {"name": name}


def used_models():
    return sorted({cell["model"] for cell in CELLS})


def study_outputs():
    outputs = []
    if any(cell["study"] == "latency" for cell in CELLS):
        outputs += [
            "paper/tables/latency.tex",
            "paper/tables/latency.csv",
            "paper/figures/latency.pdf",
        ]
    return outputs


def threads():
    return config["threads"] or len(os.sched_getaffinity(0))


def source_split():
    """The hh-rlhf split that sample sets are drawn from."""
    source = config["data"]["source"]
    if source == "local":
        return config["data"]["local_path"]
    return f"results/data/source/{source}.jsonl"


def tokenizer_inputs(wildcards):
    cfg = model_cfg(wildcards.model)
    if cfg["source"] == "synthetic" and cfg["architecture"] == "deberta-v3-large":
        return {"spm": f"results/tokenizers/spm/{wildcards.model}.model"}
    return {}


def cell_inputs(wildcards):
    params = parse_params(wildcards.params)
    return {
        "model": f"results/models/{wildcards.model}",
        "onnx": f"results/onnx/{wildcards.model}/model.onnx",
        "parity": f"results/correctness/{wildcards.model}.json",
        "rows": f"results/data/{params['set']}.jsonl",
        "reference": f"results/reference/{wildcards.model}/{params['set']}.json",
    }


def study_cells(wildcards):
    return [cell["path"] for cell in CELLS if cell["study"] == wildcards.study]
