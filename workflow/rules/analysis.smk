# Raw launches -> one tidy table per study -> statistics -> paper tables and figures.


rule launch_table:
    input:
        study_launch_files,
    output:
        "results/tables/{study}/launches.csv",
    log:
        "results/logs/tables/{study}_launches.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/launch_table.py"


rule sequential_table:
    """Each sequential block's comparisons at its last look, with the launches they took, and
    each one's verdict: what the first look that decided it said, or undecided at the cap."""
    input:
        study_looks,
    output:
        "results/tables/{study}/sequential.csv",
    log:
        "results/logs/tables/{study}_sequential.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/sequential_table.py"


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
        sequential=lambda wildcards: sequential_table(wildcards.study),
    output:
        tex="paper/tables/{study}.tex",
        csv=report(
            "paper/tables/{study}.csv",
            caption="../report/study_table.rst",
            category="Tables",
            subcategory="{study}",
        ),
    log:
        "results/logs/paper/{study}_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=lambda wildcards: study_baseline(wildcards.study),
        headline_set=lambda wildcards: headline_set(wildcards.study),
    script:
        "../scripts/study_table.py"


rule language_table:
    input:
        comparisons="results/tables/latency/comparisons.csv",
        launches=language_cells,
    output:
        tex="paper/tables/language.tex",
        csv=report(
            "paper/tables/language.csv", caption="../report/derived_table.rst", category="Tables"
        ),
    log:
        "results/logs/paper/language_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        margin=config["stats"]["equivalence_margin"],
    script:
        "../scripts/language_table.py"


rule replication_table:
    input:
        "results/tables/latency/comparisons.csv",
    output:
        tex="paper/tables/replication.tex",
        csv=report(
            "paper/tables/replication.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
    log:
        "results/logs/paper/replication_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_set=headline_set("latency"),
        baseline=study_baseline("latency"),
    script:
        "../scripts/replication_table.py"


rule best_runtime_table:
    """The best CPU runtime per model, against the baseline and the runner-up."""
    input:
        summary="results/tables/latency/summary.csv",
        comparisons="results/tables/latency/comparisons.csv",
        launches="results/tables/latency/launches.csv",
        sequential=sequential_table("latency"),
    output:
        tex="paper/tables/best_runtime.tex",
        csv=report(
            "paper/tables/best_runtime.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
    log:
        "results/logs/paper/best_runtime_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_set=headline_set("latency"),
        baseline=study_baseline("latency"),
    script:
        "../scripts/best_runtime_table.py"


rule roofline_table:
    input:
        launches="results/tables/latency/launches.csv",
        gemm="results/tables/gemm/summary.csv",
    output:
        tex="paper/tables/roofline.tex",
        csv=report(
            "paper/tables/roofline.csv", caption="../report/derived_table.rst", category="Tables"
        ),
    log:
        "results/logs/paper/roofline_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_set=headline_set("latency"),
    script:
        "../scripts/roofline_table.py"


rule ceiling_gap_table:
    input:
        unpack(ceiling_gap_inputs),
    output:
        tex="paper/tables/ceiling_gap.tex",
        csv=report(
            "paper/tables/ceiling_gap.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
    log:
        "results/logs/paper/ceiling_gap_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/ceiling_gap_table.py"


rule batching_verdicts:
    input:
        comparisons="results/tables/batching/comparisons.csv",
        summary="results/tables/batching/summary.csv",
    output:
        "paper/tables/batching_verdicts.csv",
    log:
        "results/logs/paper/batching_verdicts.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=lambda wildcards: study_baseline("batching"),
    script:
        "../scripts/batching_verdicts.py"


rule batch_operators_table:
    input:
        unpack(batch_operator_inputs),
    output:
        csv=report(
            "paper/tables/batch_operators.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        tex="paper/tables/batch_operators.tex",
    log:
        "results/logs/paper/batch_operators_table.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        by="optimizer",
    script:
        "../scripts/batch_operators_table.py"


use rule batch_operators_table as torch_batch_operators_table with:
    input:
        unpack(torch_batch_operator_inputs),
    output:
        csv=report(
            "paper/tables/torch_batch_operators.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        tex="paper/tables/torch_batch_operators.tex",
    log:
        "results/logs/paper/torch_batch_operators_table.log",
    params:
        by="runtime",


rule batch_threads_table:
    input:
        unpack(batch_thread_inputs),
    output:
        csv=report(
            "paper/tables/batch_threads.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        tex="paper/tables/batch_threads.tex",
    log:
        "results/logs/paper/batch_threads_table.log",
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/batch_threads_table.py"


rule concurrency_verdicts:
    input:
        comparisons="results/tables/concurrency/comparisons.csv",
        launches="results/tables/concurrency/launches.csv",
    output:
        "paper/tables/concurrency_verdicts.csv",
    log:
        "results/logs/paper/concurrency_verdicts.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=lambda wildcards: study_baseline("concurrency"),
        checks=config["stats"],
    script:
        "../scripts/concurrency_verdicts.py"


rule study_figure:
    input:
        "paper/tables/{figure}.csv",
    output:
        pdf="paper/figures/{figure}.pdf",
        png=report(
            "paper/figures/{figure}.png",
            caption="../report/study_figure.rst",
            category="Figures",
        ),
    log:
        "results/logs/paper/{figure}_figure.log",
    wildcard_constraints:
        figure="|".join(FIGURES),
    conda:
        "../../envs/analysis.yaml"
    params:
        set=lambda wildcards: headline_set(wildcards.figure),
    script:
        "../scripts/study_figure.py"


rule decomposition_tables:
    input:
        unpack(decomposition_inputs),
    output:
        gap_csv=report(
            "paper/tables/decomposition_gap.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        gap_tex="paper/tables/decomposition_gap.tex",
        fidelity_csv=report(
            "paper/tables/fidelity.csv", caption="../report/derived_table.rst", category="Tables"
        ),
        fidelity_tex="paper/tables/fidelity.tex",
        operators_csv=report(
            "paper/tables/ort_operators.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        operators_tex="paper/tables/ort_operators.tex",
        pdf="paper/figures/decomposition.pdf",
        png=report(
            "paper/figures/decomposition.png",
            caption="../report/decomposition_figure.rst",
            category="Figures",
        ),
        gap_pdf="paper/figures/decomposition_gap.pdf",
        gap_png=report(
            "paper/figures/decomposition_gap.png",
            caption="../report/decomposition_gap_figure.rst",
            category="Figures",
        ),
    log:
        "results/logs/paper/decomposition_tables.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        baseline=study_baseline("decomposition"),
        headline_set=headline_set("decomposition"),
        min_agreement=config["fidelity"]["min_agreement"],
    script:
        "../scripts/decomposition_tables.py"


rule notebook:
    """Executes the analysis notebook: it recomputes every figure study's statistics from the
    tidy launch tables, stops if the pipeline's tables disagree, and redraws the figures."""
    input:
        notebook="notebooks/analysis.ipynb",
        launches=expand("results/tables/{study}/launches.csv", study=figure_studies()),
        tables=expand("paper/tables/{study}.csv", study=figure_studies()),
    output:
        notebook="results/notebook/analysis.ipynb",
        figures=expand("results/notebook/{study}.{ext}", study=figure_studies(), ext=["pdf", "png"]),
    log:
        "results/logs/notebook.log",
    conda:
        "../../envs/notebook.yaml"
    params:
        parameters=notebook_parameters(),
    script:
        "../scripts/notebook.py"


rule findings:
    """The run's verdicts in words, from the tables this run made (docs/findings.md quotes it)."""
    input:
        findings_tables,
    output:
        "paper/tables/findings.md",
    log:
        "results/logs/paper/findings.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_sets={s: headline_set(s) for s in enabled_studies()},
        baselines={s: study_baseline(s) for s in enabled_studies()},
        tier=lambda wildcards: config["tier"],  # a function: "paper" reads as a path to the linter
    script:
        "../scripts/findings.py"


rule paper_numbers:
    input:
        tables=[
            *expand("paper/tables/{study}.csv", study=enabled_studies()),
            *(["paper/tables/fidelity.csv"] if "decomposition" in enabled_studies() else []),
            *[
                f"paper/tables/{table}.csv"
                for table in (
                    "language",
                    "int8_sweep",
                    "batch_operators",
                    "torch_batch_operators",
                    "batch_threads",
                )
                if f"paper/tables/{table}.tex" in study_outputs()
            ],
        ],
        text=PAPER_TEXT,
    output:
        "paper/tables/numbers.tex",
    log:
        "results/logs/paper/numbers.log",
    conda:
        "../../envs/analysis.yaml"
    params:
        headline_sets={s: headline_set(s) for s in enabled_studies()},
        tier=lambda wildcards: config["tier"],  # a function: "paper" reads as a path to the linter
    script:
        "../scripts/paper_numbers.py"


rule paper_pdf:
    input:
        PAPER_TEXT,
        "paper/tables/numbers.tex",
        study_outputs(),
    output:
        "paper/main.pdf",
    log:
        "results/logs/paper/latexmk.log",
    conda:
        "../../envs/paper.yaml"
    shell:
        "cd paper && latexmk -pdf -interaction=nonstopmode -halt-on-error main.tex > ../{log} 2>&1"
