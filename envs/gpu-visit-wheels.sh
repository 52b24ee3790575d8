#!/usr/bin/env bash
# Downloads, here, the wheels a lent GPU machine needs for envs/gpu-visit.sh, into .whl/ (ignored
# by git, about 42 MB). That machine (the device tool's H200 image: Python 3.12, PyTorch with CUDA,
# no network) lacks Snakemake and FastAPI and has transformers 5, tokenizers 0.23 and
# huggingface_hub 1; these are the lock's versions of what is missing or differs there. Everything
# else the GPU cells import (torch, numpy, pandas, scipy, onnx, onnxruntime, sentencepiece, httpx,
# matplotlib, ...) the image has. Versions come from envs/requirements.lock.
#   bash envs/gpu-visit-wheels.sh            wheels for Python 3.12 (PYTHON_VERSION=3.11 for others)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
    # the workflow manager and what it needs beyond the image
    snakemake snakemake-interface-common snakemake-interface-executor-plugins
    snakemake-interface-logger-plugins snakemake-interface-report-plugins
    snakemake-interface-scheduler-plugins snakemake-interface-storage-plugins conda-inject
    ConfigArgParse connection_pool docutils dpath GitPython gitdb smmap humanfriendly immutables
    jsonschema jsonschema-specifications referencing rpds-py nbformat fastjsonschema jupyter_core
    traitlets platformdirs PuLP reretry smart_open throttler yte argparse-dataclass tenacity
    sqlmodel SQLAlchemy greenlet
    # the FastAPI runtime's service
    fastapi starlette uvicorn pydantic pydantic_core annotated-types typing-inspection
    opentelemetry-api
    # the versions the project's code and tokenizers are pinned to, and the ONNX exporter
    transformers tokenizers huggingface_hub optimum optimum-onnx
)
python_version=${PYTHON_VERSION:-3.12}
pip=(.venv/bin/python -m pip)
[ -x .venv/bin/python ] || pip=(python3 -m pip)
mkdir -p .whl
rm -f .whl/*.whl
for name in "${packages[@]}"; do
    pin=$(grep -i -m1 "^${name}==" envs/requirements.lock | cut -d' ' -f1) || true
    if [ -z "$pin" ]; then
        echo "gpu-visit-wheels: $name is not in envs/requirements.lock" >&2
        exit 1
    fi
    # A wheel for that Python and Linux x86_64; a package published only as source is built here
    # (pure Python, so the wheel runs there too).
    "${pip[@]}" download --quiet --no-deps --only-binary=:all: --python-version "$python_version" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl "$pin" 2>/dev/null \
        || "${pip[@]}" wheel --quiet --no-deps -w .whl "$pin"
done
echo "gpu-visit-wheels: $(ls .whl/*.whl | wc -l) wheels, $(du -sh .whl | cut -f1), in .whl/"
