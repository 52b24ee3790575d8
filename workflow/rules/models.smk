# Tokenizers, model folders, ONNX export, PyTorch reference scores and the parity gate.


rule train_sentencepiece:
    output:
        "results/tokenizers/spm/{model}.model",
    log:
        "results/logs/tokenizers/spm_{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        tokenizers=config["tokenizers"],
        data=config["data"],
    script:
        "../scripts/train_sentencepiece.py"


# A stand-in for a user's own model folder (models.<name>.stand_in), which the model's tokenizer
# and model rules then read as `source: local` reads any folder.
rule stand_in_model:
    input:
        unpack(stand_in_inputs),
    output:
        directory("results/stand-in/{model}"),
    log:
        "results/logs/models/stand-in_{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("build"),
    params:
        model=lambda wildcards: model_cfg(wildcards.model),
    script:
        "../scripts/build_stand_in.py"


rule tokenizer:
    input:
        unpack(tokenizer_inputs),
    output:
        directory("results/tokenizers/{model}"),
    log:
        "results/logs/tokenizers/{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        model=lambda wildcards: model_cfg(wildcards.model),
    script:
        "../scripts/build_tokenizer.py"


rule model:
    input:
        tokenizer="results/tokenizers/{model}",
    output:
        directory("results/models/{model}"),
    log:
        "results/logs/models/{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("build"),
    params:
        model=lambda wildcards: model_cfg(wildcards.model),
    script:
        "../scripts/build_model.py"


# The co-location study's rollout generator: GPT-2 with seeded random weights on a scorer's
# tokenizer (rmbench.models.generator).
rule generator:
    input:
        tokenizer=lambda wildcards: f"results/tokenizers/{generator_config()['tokenizer']}",
    output:
        directory("results/generator"),
    log:
        "results/logs/models/generator.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        generator=lambda wildcards: generator_config(),
    script:
        "../scripts/build_generator.py"


rule export_onnx:
    input:
        model="results/models/{model}",
    output:
        "results/onnx/{model}/model.onnx",
    log:
        "results/logs/onnx/{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    resources:
        mem_mb=job_memory("export"),
    params:
        opset=config["parity"]["opset"],
    script:
        "../scripts/export_onnx.py"


rule reference_scores:
    input:
        model="results/models/{model}",
        rows="results/data/{set}.jsonl",
    output:
        "results/reference/{model}/{set}.json",
    log:
        "results/logs/reference/{model}_{set}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    threads: threads()
    resources:
        mem_mb=job_memory("reference"),
    params:
        threads=threads(),
    script:
        "../scripts/reference_scores.py"


rule parity:
    input:
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.onnx",
        rows="results/data/main60.jsonl",
        reference="results/reference/{model}/main60.json",
    output:
        "results/correctness/{model}.json",
    log:
        "results/logs/correctness/{model}.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    threads: threads()
    resources:
        mem_mb=job_memory("reference"),
    params:
        parity=config["parity"],
        threads=threads(),
    script:
        "../scripts/parity.py"
