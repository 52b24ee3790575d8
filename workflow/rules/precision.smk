# The decomposition study's ONNX variants (int8, transformers-optimized, relative shift), the fidelity gate
# every reduced-precision variant passes through before its launches are checked against it, and
# ONNX Runtime's operator profile (where its time goes).


rule quantize_onnx:
    input:
        "results/onnx/{model}/model.onnx",
    output:
        "results/onnx/{model}/model.int8.onnx",
    log:
        "results/logs/onnx/{model}_int8.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("graph"),
    params:
        quantization=config["quantization"],
        matmul_parts=matmul_parts,
    script:
        "../scripts/quantize_onnx.py"


# An int8 copy with `quantization`'s settings but another group of MatMuls (a decomposition variant
# with its own `matmuls`: a setting the quantization sweep found to keep fp32's preferences).
use rule quantize_onnx as quantize_onnx_matmuls with:
    output:
        "results/onnx/{model}/model.int8.{matmuls}.onnx",
    log:
        "results/logs/onnx/{model}_int8_{matmuls}.log",
    params:
        quantization=lambda wildcards: config["quantization"] | {"matmuls": wildcards.matmuls},


rule optimize_onnx:
    input:
        onnx="results/onnx/{model}/model.onnx",
        model="results/models/{model}",
    output:
        onnx="results/onnx/{model}/model.opt.onnx",
        fused="results/onnx/{model}/model.opt.json",
    log:
        "results/logs/onnx/{model}_opt.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("graph"),
    script:
        "../scripts/optimize_onnx.py"


# The fused graph's parity gate. Fusions may move scores, so a failure is data, not a stop: its
# launches are recorded as mismatches with the gate's numbers, untimed (rmbench.studies.launch).
use rule parity as parity_fused with:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.opt.onnx",
        rows="results/data/main60.jsonl",
        reference="results/reference/{model}/main60.json",
    output:
        "results/correctness/{model}.opt.json",
    log:
        "results/logs/correctness/{model}_opt.log",
    params:
        parity=config["parity"],
        threads=threads(),
        fatal=False,


# DeBERTa's relative attention exported as a diagonal shift (rmbench/export/relative_shift.py): an fp32
# graph like the export, so it passes the same parity gate against PyTorch.
rule export_onnx_relative_shift:
    input:
        model="results/models/{model}",
    output:
        "results/onnx/{model}/model.relshift.onnx",
    log:
        "results/logs/onnx/{model}_relshift.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("export"),
    params:
        opset=config["parity"]["opset"],
        attention="relative_shift",
    script:
        "../scripts/export_onnx_attention.py"


use rule parity as parity_relative_shift with:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.relshift.onnx",
        rows="results/data/main60.jsonl",
        reference="results/reference/{model}/main60.json",
    output:
        "results/correctness/{model}.relshift.json",
    log:
        "results/logs/correctness/{model}_relshift.log",


# The same diagonal shift, with the shift and the sum of both terms as the native engine's own
# operator (rmbench.DisentangledBias, native/src/disentangled_bias.cpp). Its parity gate
# registers the engine's operator library in ONNX Runtime.
use rule export_onnx_relative_shift as export_onnx_disentangled_bias with:
    output:
        "results/onnx/{model}/model.dbias.onnx",
    log:
        "results/logs/onnx/{model}_dbias.log",
    params:
        opset=config["parity"]["opset"],
        attention="disentangled_bias",


use rule parity as parity_disentangled_bias with:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.dbias.onnx",
        rows="results/data/main60.jsonl",
        reference="results/reference/{model}/main60.json",
        operators=inputs.NATIVE_OPERATORS,
    output:
        "results/correctness/{model}.dbias.json",
    log:
        "results/logs/correctness/{model}_dbias.log",


# The engine's operator for the position terms, then scores, mask, softmax and the weighted sum of
# values as one ONNX Runtime operator (com.microsoft.MultiHeadAttention). Its parity gate
# registers the engine's operator library too.
use rule export_onnx_relative_shift as export_onnx_multihead_attention with:
    output:
        "results/onnx/{model}/model.mha.onnx",
    log:
        "results/logs/onnx/{model}_mha.log",
    params:
        opset=config["parity"]["opset"],
        attention="multihead_attention",


use rule parity as parity_multihead_attention with:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.mha.onnx",
        rows="results/data/main60.jsonl",
        reference="results/reference/{model}/main60.json",
        operators=inputs.NATIVE_OPERATORS,
    output:
        "results/correctness/{model}.mha.json",
    log:
        "results/logs/correctness/{model}_mha.log",


rule fp32_pair_scores:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.onnx",
        rows="results/data/{set}.jsonl",
        parity="results/correctness/{model}.json",
    output:
        FP32_SCORES_PATH,
    log:
        "results/logs/fidelity/fp32/{model}_{set}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    threads: threads()
    params:
        threads=threads(),
        max_length=config["data"]["max_length"],
    script:
        "../scripts/fp32_pair_scores.py"


rule fidelity:
    input:
        unpack(fidelity_inputs),
    output:
        FIDELITY_PATH,
    log:
        "results/logs/fidelity/{model}/{runtime}/{params}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    threads: threads()
    params:
        threads=threads(),
        max_length=config["data"]["max_length"],
        options=lambda wildcards: study_runtime_options("decomposition", wildcards.runtime),
        min_agreement=config["fidelity"]["min_agreement"],
        repo=workflow.basedir,
    script:
        "../scripts/fidelity.py"


rule ort_operators:
    input:
        onnx="results/onnx/{model}/model.onnx",
        model="results/models/{model}",
        rows=headline_rows("decomposition"),
    output:
        "results/decomposition/operators/{model}.json",
    log:
        "results/logs/decomposition/operators_{model}.log",
    conda:
        "../../envs/bench.yaml"
    # A measurement: the machine to itself, as every launch.
    threads: all_cores
    params:
        threads=threads(),
        rows=study_config("decomposition").get("rows", 0),
        warmup=config["launch"]["warmup_rows"],
        max_length=config["data"]["max_length"],
        repo=workflow.basedir,
    script:
        "../scripts/ort_operators.py"


# Where the latency study's time goes against the GEMM ceiling: ORT's profile of the export its
# engines load, on its rows as a launch scores them, and the ceiling probed in the same process.
rule ceiling_operators:
    input:
        unpack(export_operators),
        onnx=lambda wildcards: onnx_file(
            wildcards.model, "fp32", engine_export(config, wildcards.model)
        ),
        model="results/models/{model}",
        rows=headline_rows("latency"),
    output:
        "results/latency/operators/{model}.json",
    log:
        "results/logs/latency/operators_{model}.log",
    conda:
        "../../envs/bench.yaml"
    # A measurement: the machine to itself, as every launch.
    threads: all_cores
    params:
        threads=threads(),
        optimizer=lambda wildcards: engine_export(config, wildcards.model),
        rows=study_config("latency").get("rows", 0),
        warmup=config["launch"]["warmup_rows"],
        max_length=config["data"]["max_length"],
        repo=workflow.basedir,
    script:
        "../scripts/ceiling_operators.py"


# The batching study's question: why is a CPU batch no faster per row than its rows alone? ORT's
# profile of the batching set's first rows, each alone and as a batch of copies of itself (no
# padding), taken in turn in one session: which operators cost more per row in a batch, in the
# stock export or another (optimizer: relative_shift).
rule batch_operators:
    input:
        unpack(export_operators),
        onnx=lambda wildcards: onnx_file(wildcards.model, "fp32", wildcards.optimizer),
        model="results/models/{model}",
        rows=headline_rows("batching"),
    output:
        "results/batching/operators/{model}/{optimizer}.json",
    log:
        "results/logs/batching/operators_{model}_{optimizer}.log",
    conda:
        "../../envs/bench.yaml"
    # A measurement: the machine to itself, as every launch.
    threads: all_cores
    params:
        threads=threads(),
        rows=study_config("batching").get("operator_profile", {}).get("rows", 0),
        batch=study_config("batching").get("operator_profile", {}).get("batch", 0),
        warmup=config["launch"]["warmup_rows"],
        max_length=config["data"]["max_length"],
        repo=workflow.basedir,
    script:
        "../scripts/batch_operators.py"


# ... and why PyTorch's batches differ: torch.profiler on the same rows alone and as batches of
# copies, per PyTorch runtime (eager, torch.compile with the batching study's options).
rule torch_batch_operators:
    input:
        model="results/models/{model}",
        rows=headline_rows("batching"),
    output:
        "results/batching/torch_operators/{model}/{runtime}.json",
    log:
        "results/logs/batching/torch_operators_{model}_{runtime}.log",
    conda:
        "../../envs/bench.yaml"
    # A measurement: the machine to itself, as every launch.
    threads: all_cores
    params:
        threads=threads(),
        rows=study_config("batching").get("operator_profile", {}).get("rows", 0),
        batch=study_config("batching").get("operator_profile", {}).get("batch", 0),
        options=lambda wildcards: study_runtime_options("batching", wildcards.runtime),
        warmup=config["launch"]["warmup_rows"],
        max_length=config["data"]["max_length"],
        repo=workflow.basedir,
    script:
        "../scripts/torch_batch_operators.py"


# ... and whether it is the threads: the same rows alone and as batches of copies of themselves on
# one session per thread setting (intra-op threads, sequential or parallel execution, inter-op
# threads), in turn in one process.
rule batch_threads:
    input:
        onnx=lambda wildcards: onnx_file(wildcards.model, "fp32"),
        model="results/models/{model}",
        rows=headline_rows("batching"),
    output:
        "results/batching/threads/{model}.json",
    log:
        "results/logs/batching/threads_{model}.log",
    conda:
        "../../envs/bench.yaml"
    # A measurement: the machine to itself, as every launch.
    threads: all_cores
    params:
        probe=study_config("batching").get("thread_probe", {}),
        threads=threads(),
        warmup=config["launch"]["warmup_rows"],
        max_length=config["data"]["max_length"],
        repo=workflow.basedir,
    script:
        "../scripts/batch_threads.py"


# The quantization sweep: which int8 settings keep fp32's preferences (gated, not timed).
rule int8_sweep:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.onnx",
        rows=lambda wildcards: f"results/data/{config['quantization_sweep']['set']}.jsonl",
        fp32_scores=lambda wildcards: FP32_SCORES_PATH.format(
            model=wildcards.model, set=config["quantization_sweep"]["set"]
        ),
    output:
        "results/fidelity/int8_sweep/{model}/{settings}.json",
    log:
        "results/logs/fidelity/int8_sweep/{model}/{settings}.log",
    conda:
        "../../envs/bench.yaml"
    threads: threads()
    resources:
        mem_mb=job_memory("graph"),
    params:
        settings=sweep_setting,
        matmul_parts=matmul_parts,
        repo=workflow.basedir,
        threads=threads(),
        max_length=config["data"]["max_length"],
        min_agreement=config["fidelity"]["min_agreement"],
    script:
        "../scripts/int8_sweep.py"


rule int8_sweep_table:
    input:
        expand(
            "results/fidelity/int8_sweep/{model}/{settings}.json",
            model=config["quantization_sweep"]["models"],
            settings=SWEEP_SETTINGS,
        ),
    output:
        csv=report(
            "paper/tables/int8_sweep.csv",
            caption="../report/derived_table.rst",
            category="Tables",
        ),
        tex="paper/tables/int8_sweep.tex",
    log:
        "results/logs/paper/int8_sweep_table.log",
    conda:
        "../../envs/bench.yaml"
    params:
        timed=timed_settings(config),
        min_agreement=config["fidelity"]["min_agreement"],
    script:
        "../scripts/int8_sweep_table.py"
