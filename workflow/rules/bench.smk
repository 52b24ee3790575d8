# One job = one launch = one fresh process = one result file.


rule cell:
    input:
        unpack(cell_inputs),
    output:
        CELL_PATH,
    log:
        "results/logs/cells/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.log",
    # Launches of different runtimes take turns, in a seeded order (config launch.order_seed).
    priority: launch_priority
    conda:
        "../../envs/bench.yaml"
    # Every core: a measurement never shares the machine with another job.
    threads: workflow.cores
    params:
        settings=cell_settings,
        repo=workflow.basedir,
    script:
        "../scripts/run_cell.py"
