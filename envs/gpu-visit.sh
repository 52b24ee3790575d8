#!/usr/bin/env bash
# Runs ON a lent GPU machine without network (the device tool's H200 image, see README "GPU
# cells"): installs the wheels carried in .whl/ (envs/gpu-visit-wheels.sh) beside the image's
# PyTorch, builds the data, models, ONNX files and gates the GPU cells need (the tokenizers are
# carried in results/tokenizers: ELECTRA's vocabulary comes from an 83 MB wheel), measures the
# PyTorch runtimes' GPU cells (target gpu_torch), and packs the cell records and logs into
# $OUT/gpu-cells.tar.gz, also when the time runs out (what finished is kept).
#   bash envs/gpu-visit.sh [seconds]     Snakemake's time, default 480; then the packing
# Back here: tar -xzf gpu-cells.tar.gz && .venv/bin/snakemake --cores 1 all
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${1:-480}
out=${OUT:-gpu-visit-out}
python=${PYTHON:-python3}
site=${SITE:-/tmp/rmbench-site}
mkdir -p "$out"
exec > >(tee "$out/visit.log") 2>&1
echo "gpu-visit: $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "gpu-visit: no nvidia-smi"

ls .whl/*.whl >/dev/null || { echo "gpu-visit: no wheels in .whl/ (carry it)"; exit 1; }
[ -d results/tokenizers/electra ] || { echo "gpu-visit: carry results/tokenizers"; exit 1; }
"$python" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl || exit 1
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
"$python" -c 'import sys, torch, transformers, snakemake, fastapi; print("gpu-visit: Python", sys.version.split()[0],
    "torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.is_available(), "transformers", transformers.__version__)' || exit 1

# The carried tokenizers are up to date: built from the SentencePiece model, not before it
# (a copy's times are its own).
touch results/tokenizers/spm/*
sleep 1
find results/tokenizers/deberta results/tokenizers/electra -exec touch {} +

timeout --signal=INT --kill-after=30 "$budget" "$python" -m snakemake --cores all --keep-going \
    --rerun-triggers mtime -- gpu_torch
echo "gpu-visit: snakemake exited with $?"

# Finished launches only (a launch writes its record when it ends) and their logs, to extract
# here; every log of the visit apart, to read (the builds there are not this checkout's).
find results/cells results/logs/cells -path '*/cuda/*' -type f > "$out/cells.txt"
echo "gpu-visit: $(grep -c '\.json$' "$out/cells.txt") GPU launch records"
tar -czf "$out/gpu-cells.tar.gz" -T "$out/cells.txt"
tar -czf "$out/visit-logs.tar.gz" results/logs .snakemake/log
ls -la "$out"
