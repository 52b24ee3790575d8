# One job = one launch = one fresh process = one result file.


rule cell:
    input:
        unpack(cell_inputs),
    output:
        CELL_PATH,
    log:
        "results/logs/cells/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.log",
    conda:
        "../../envs/bench.yaml"
    # Every core: a measurement never shares the machine with another job.
    threads: workflow.cores
    params:
        settings=lambda wildcards: {
            "threads": threads(),
            "warmup_rows": config["launch"]["warmup_rows"],
            "timeout_s": config["launch"]["timeout_s"],
            "max_length": config["data"]["max_length"],
            "tolerance": config["parity"][
                "gpu_tolerance" if wildcards.device == "cuda" else "tolerance"
            ],
            "repeat": config["studies"][wildcards.study].get("repeat", 1),
        },
        repo=workflow.basedir,
    script:
        "../scripts/run_cell.py"
