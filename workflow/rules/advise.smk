# One user's reward model, one command: which runtime, which batching, and the service line.
#   snakemake --cores 1 advise --config rm=<model folder or hub id> [rows=<JSONL>] [budget_min=20]


rule advise:
    """Benchmarks the reward model `rm` with every runtime that can score its family and writes
    results/advise/<its name>/advice.md and advice.json (rmbench.studies.advise)."""
    input:
        rows=config.get("rows") or "results/data/main60.jsonl",
        binary=inputs.NATIVE_BINARY,
    log:
        "results/logs/advise.log",
    conda:
        "../../envs/bench.yaml"
    params:
        rm=config.get("rm", ""),
        budget=["--budget-min", str(config["budget_min"])] if "budget_min" in config else [],
    script:
        "../scripts/advise.py"
