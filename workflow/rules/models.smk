# Tokenizers, model folders, ONNX export, PyTorch reference scores and the parity gate.


rule train_sentencepiece:
    output:
        "results/tokenizers/spm/{model}.model",
    params:
        tokenizers=config["tokenizers"],
        data=config["data"],
    log:
        "results/logs/tokenizers/spm_{model}.log",
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/train_sentencepiece.py"


rule tokenizer:
    input:
        unpack(tokenizer_inputs),
    output:
        directory("results/tokenizers/{model}"),
    params:
        model=lambda wildcards: model_cfg(wildcards.model),
    log:
        "results/logs/tokenizers/{model}.log",
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/build_tokenizer.py"


rule model:
    input:
        tokenizer="results/tokenizers/{model}",
    output:
        directory("results/models/{model}"),
    params:
        model=lambda wildcards: model_cfg(wildcards.model),
    resources:
        mem_mb=8000,
    log:
        "results/logs/models/{model}.log",
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/build_model.py"


rule export_onnx:
    input:
        model="results/models/{model}",
    output:
        "results/onnx/{model}/model.onnx",
    params:
        opset=config["parity"]["opset"],
    resources:
        mem_mb=12000,
    log:
        "results/logs/onnx/{model}.log",
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/export_onnx.py"


rule reference_scores:
    input:
        model="results/models/{model}",
        rows="results/data/{set}.jsonl",
    output:
        "results/reference/{model}/{set}.json",
    params:
        threads=threads(),
    threads: threads()
    log:
        "results/logs/reference/{model}_{set}.log",
    conda:
        "../../envs/bench.yaml"
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
    params:
        parity=config["parity"],
        threads=threads(),
    threads: threads()
    log:
        "results/logs/correctness/{model}.log",
    conda:
        "../../envs/bench.yaml"
    script:
        "../scripts/parity.py"
