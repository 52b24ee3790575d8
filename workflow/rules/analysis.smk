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


rule study_stats:
    input:
        "results/tables/{study}/launches.csv",
    output:
        summary="results/tables/{study}/summary.csv",
        comparisons="results/tables/{study}/comparisons.csv",
    log:
        "results/logs/tables/{study}_stats.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        checks=config["stats"],
    script:
        "../scripts/study_stats.py"


rule study_table:
    input:
        summary="results/tables/{study}/summary.csv",
        comparisons="results/tables/{study}/comparisons.csv",
    output:
        tex="paper/tables/{study}.tex",
        csv="paper/tables/{study}.csv",
    log:
        "results/logs/paper/{study}_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=lambda wildcards: study_baseline(wildcards.study),
        caption=lambda wildcards: STUDY_CAPTIONS[wildcards.study],
    script:
        "../scripts/study_table.py"


rule language_table:
    input:
        "results/tables/latency/comparisons.csv",
    output:
        tex="paper/tables/language.tex",
        csv="paper/tables/language.csv",
    log:
        "results/logs/paper/language_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/language_table.py"


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


rule replication_table:
    input:
        "results/tables/latency/comparisons.csv",
    output:
        tex="paper/tables/replication.tex",
        csv="paper/tables/replication.csv",
    log:
        "results/logs/paper/replication_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_set=config["studies"]["latency"]["sets"][0],
        baseline=study_baseline("latency"),
    script:
        "../scripts/replication_table.py"


rule roofline_table:
    input:
        launches="results/tables/latency/launches.csv",
        gemm="results/tables/gemm/summary.csv",
    output:
        tex="paper/tables/roofline.tex",
        csv="paper/tables/roofline.csv",
    log:
        "results/logs/paper/roofline_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_set=config["studies"]["latency"]["sets"][0],
    script:
        "../scripts/roofline_table.py"
