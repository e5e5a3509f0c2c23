#!/usr/bin/env bash
# Installs rl-bk and everything it needs, in the one order that works. Idempotent: run it again
# after a pull; what is installed already is kept.
#
#   scripts/setup.sh                 # core + tests (BabyAI, Crafter, NetHack, RLlib/Tune/Serve)
#   RLBK_EXTRAS=wandb scripts/setup.sh   # plus optional extras (comma-separated: wandb, ...)
#
# It installs into the active Python environment (make a venv first if you want one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
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
echo "[setup] rl-bk[$extras] (ray 2.60.0, gymnasium 1.2.2, minigrid, crafter, numba)"
pip_install -e ".[$extras]"

# 3. nle without its dependencies: every nle release pins a gymnasium that ray[rllib] refuses
#    (nle 1.3.0 wants 1.2.0, ray 2.60 wants 1.2.2); nle 1.3.0 runs fine on 1.2.2.
if ! "$PY" -c "import nle" 2>/dev/null; then
  echo "[setup] nle 1.3.0 (--no-deps)"
  pip_install --no-deps "nle==1.3.0" pybind11
fi

"$PY" - <<'PY'
import env_registry, ray, torch, gymnasium
print(f"[setup] ok: ray {ray.__version__}, torch {torch.__version__}, gymnasium "
      f"{gymnasium.__version__}, {len(env_registry.ENV_SPECS)} environments")
PY
