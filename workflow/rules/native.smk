# The native C++ engine: configured and built by CMake, its C++ tests run by ctest. Every
# benchmark cell that uses it takes the binary as input, so it is rebuilt when sources change.


rule native_build:
    input:
        local(NATIVE_SOURCES),  # workflow sources travel with the workflow, not through storage
    output:
        binary="results/native/bin/rmscore",
        operators=inputs.NATIVE_OPERATORS,  # its operators, for ONNX Runtime from Python
    log:
        "results/logs/native/build.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/native.yaml"
    threads: all_cores
    params:
        build="results/native/build",
        python=sys.executable,  # its onnxruntime package provides the library the engine links
    # A build folder configured in another copy of the project (a copied or moved tree) starts
    # afresh: CMake refuses a cache made for another source folder.
    shell:
        "(grep -qsx CMAKE_HOME_DIRECTORY:INTERNAL=$(pwd -P)/native {params.build}/CMakeCache.txt"
        " || rm -rf {params.build}; cmake -S native -B {params.build} -DCMAKE_BUILD_TYPE=Release -DPYTHON={params.python}"
        " && cmake --build {params.build} -j {threads}"
        " && ctest --test-dir {params.build} --output-on-failure"
        " && cp {params.build}/rmscore {output.binary}"
        " && cp {params.build}/librmbench_ops.so {output.operators}) > {log} 2>&1"


rule native_parity:
    input:
        binary="results/native/bin/rmscore",
        model="results/models/{model}",
        onnx="results/onnx/{model}/model.onnx",
        sets=expand("results/data/{set}.jsonl", set=config["sets"]),
        reference="results/reference/{model}/main60.json",
    output:
        "results/correctness/{model}_native.json",
    log:
        "results/logs/correctness/{model}_native.log",
    priority: SETUP_PRIORITY
    conda:
        "../../envs/bench.yaml"
    params:
        parity=config["parity"],
        threads=threads(),
        max_length=config["data"]["max_length"],
    script:
        "../scripts/native_parity.py"
