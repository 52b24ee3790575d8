# The hh-rlhf split (synthetic, hub or local) and the seeded sample sets drawn from it.


rule source_split:
    output:
        "results/data/source/{source}.jsonl",
    log:
        "results/logs/data/source_{source}.log",
    wildcard_constraints:
        source="synthetic|hub",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        data=lambda wildcards: config["data"] | {"source": wildcards.source},
    script:
        "../scripts/source_split.py"


rule sample_set:
    input:
        split=source_split(),
        tokenizers=expand("results/tokenizers/{model}", model=config["models"]),
    output:
        "results/data/{set}.jsonl",
    log:
        "results/logs/data/{set}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        size=lambda wildcards: config["sets"][wildcards.set]["size"],
        seed=lambda wildcards: config["sets"][wildcards.set]["seed"],
        models=list(config["models"]),
        source=config["data"]["source"],
    script:
        "../scripts/sample_set.py"
