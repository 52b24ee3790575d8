# One job = one launch = one fresh process = one result file.


rule cell:
    input:
        unpack(timed_cell_inputs),
    output:
        CELL_PATH,
    log:
        "results/logs/cells/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.log",
    wildcard_constraints:
        device="cpu",
    # Launches of different runtimes take turns, in a seeded order (config launch.order_seed).
    priority: launch_priority
    conda:
        "../../envs/bench.yaml"
    # Every core: a measurement never shares the machine with another job.
    threads: all_cores
    resources:
        mem_mb=job_memory("launch"),
        runtime=CELL_RUNTIME_MIN,
    params:
        settings=cell_settings,
        repo=workflow.basedir,
    script:
        "../scripts/run_cell.py"


# The untimed launch (launch 0) that fills Inductor's cache before a compile-study cell timed with
# `cache: warm`, just before its block (see WARM_CACHE_PATH).
rule warm_compile_cache:
    input:
        unpack(cell_inputs),
    output:
        WARM_CACHE_PATH,
    log:
        "results/logs/inductor-cache/{study}/{model}/{device}/{runtime}/{params}/launch~{launch}.log",
    wildcard_constraints:
        launch="0",
    priority: warm_cache_priority
    conda:
        "../../envs/bench.yaml"
    threads: all_cores
    resources:
        mem_mb=job_memory("launch"),
        runtime=CELL_RUNTIME_MIN,
    params:
        settings=cell_settings,
        repo=workflow.basedir,
    script:
        "../scripts/run_cell.py"


# GPU launches: the same job holding a GPU, so that cluster executors place it on a GPU node and
# a local run with --resources gpu=1 runs one at a time.
use rule cell as gpu_cell with:
    wildcard_constraints:
        device="cuda",
    resources:
        mem_mb=job_memory("launch"),
        runtime=CELL_RUNTIME_MIN,
        gpu=1,
        gpu_manufacturer="nvidia",


# A look at a block's launches (rmbench.stats.sequential): which comparisons are decided, and which
# cells get more launches. A checkpoint, so that the launches it asks for join the DAG.
checkpoint sequential_look:
    input:
        look_inputs,
    output:
        LOOK_PATH,
    log:
        "results/logs/sequential/{study}/{model}/{device}/{set}/look~{look}.log",
    priority: look_priority
    conda:
        "../../envs/analysis.yaml"
    params:
        settings=look_settings,
    script:
        "../scripts/sequential_look.py"
