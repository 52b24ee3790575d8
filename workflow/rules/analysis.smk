# Raw launches -> one tidy table per study -> statistics -> paper tables and figures.


rule launch_table:
    input:
        study_cells,
    output:
        "results/tables/{study}/launches.csv",
    log:
        "results/logs/tables/{study}_launches.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/launch_table.py"


rule latency_stats:
    input:
        "results/tables/latency/launches.csv",
    output:
        summary="results/tables/latency/summary.csv",
        comparisons="results/tables/latency/comparisons.csv",
    log:
        "results/logs/tables/latency_stats.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/latency_stats.py"


rule latency_table:
    input:
        summary="results/tables/latency/summary.csv",
        comparisons="results/tables/latency/comparisons.csv",
    output:
        tex="paper/tables/latency.tex",
        csv="paper/tables/latency.csv",
    log:
        "results/logs/paper/latency_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=config["studies"]["latency"]["baseline"],
    script:
        "../scripts/latency_table.py"


rule latency_figure:
    input:
        "paper/tables/latency.csv",
    output:
        pdf="paper/figures/latency.pdf",
        png="paper/figures/latency.png",
    log:
        "results/logs/paper/latency_figure.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        set=config["studies"]["latency"]["sets"][0],
    script:
        "../scripts/latency_figure.py"
