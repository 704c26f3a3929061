#!/usr/bin/env bash
# The checks that need a GPU server, in one run: the reference models measured on the GPU (per
# layer, and the step's memory), the compressors' cost table on the GPU, the unit suite and the
# notebooks, each written to a file under $OUT (default gpu-results/) as it runs, so a run cut
# short still says which tests passed and failed.
#
#   OUT=gpu-results bash benchmarks/gpu_server.sh
#
# Needs python3 with a CUDA build of torch and the packages of requirements.txt (a package that
# is missing shows as that test's error, by name). Limits in seconds: UNIT_LIMIT, NB_LIMIT.
# Files under $OUT: log.txt, resnet50_cuda.json, bert_base_cuda.json, costs_cuda.json, unit.txt,
# notebooks.txt.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
JOBS=${JOBS:-8}

exec > >(tee "$OUT/log.txt") 2>&1
python3 - <<'PY'
import importlib.util, torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPUs:",
      [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])
req = [l.split("#")[0].split(">")[0].split("<")[0].split("=")[0].strip() for l in open("requirements.txt")]
names = {"scikit-learn": "sklearn", "jupyter-book": "jupyter_book", "otter-grader": "otter",
         "import-linter": "importlinter", "pytest-xdist": "xdist", "pytest-timeout": "pytest_timeout",
         "sphinx-mathjax-offline": "sphinx_mathjax_offline"}
missing = [r for r in req if r and importlib.util.find_spec(names.get(r, r).replace("-", "_")) is None]
print("missing packages:", ", ".join(missing) or "none")
PY

echo "== profile ResNet-50 and BERT-Base on cuda (sim.measure's CUDA path: CUDA events per layer)"
python3 -m commlab profile --model benchmarks.reference_models:resnet50 --input 3x224x224 --batch 64 \
  --device cuda --out "$OUT/resnet50_cuda.json" 2>&1 | tail -n 6
python3 -m commlab profile --model benchmarks.reference_models:bert_base --input 128 --vocab 30522 --batch 32 \
  --device cuda --out "$OUT/bert_base_cuda.json" 2>&1 | tail -n 6

echo "== the compressors' encode and decode seconds against size on cuda"
timeout "${COST_LIMIT:-90}" python3 benchmarks/compress_costs.py --device cuda --out "$OUT/costs_cuda.json"

echo "== unit tests (ranks start from a fork server here: this machine has a GPU)"
# SIGINT at the limit: pytest stops as on Ctrl-C and still prints each failure's traceback and the summary
timeout -s INT -k 30 "${UNIT_LIMIT:-330}" python3 -m pytest -v --tb=short -rfE -n "$JOBS" tests --ignore=tests/website \
  -p no:cacheprovider > "$OUT/unit.txt" 2>&1
tail -n 3 "$OUT/unit.txt"; grep -E "^(FAILED|ERROR) " "$OUT/unit.txt" | head -40

echo "== notebooks"
timeout -s INT -k 30 "${NB_LIMIT:-150}" python3 -m pytest -v -rfE --nbval-lax -p no:cacheprovider -n "$JOBS" --dist loadscope notebooks \
  > "$OUT/notebooks.txt" 2>&1
tail -n 3 "$OUT/notebooks.txt"
