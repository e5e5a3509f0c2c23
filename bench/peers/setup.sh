#!/usr/bin/env bash
# The peers' environments for bench/peer_throughput.py, under bench/peers/.venvs/ (git ignores
# it). Never rl-bk's own: sample-factory 2.1.1 pins gymnasium<1.0 and numpy<2, and nle 1.3.0
# pins gymnasium==1.2.0, so nle goes in with --no-deps (its code runs on gymnasium 0.29).
# CleanRL's ppo.py is one file, read at a fixed commit; its environment is rl-bk's (for the
# env) plus what ppo.py imports (tyro, tensorboard).
#
#   bash bench/peers/setup.sh                 # downloads ppo.py from GitHub
#   CLEANRL_PPO=/path/to/ppo.py bash bench/peers/setup.sh   # or copies this file
set -euo pipefail
cd "$(dirname "$0")"
COMMIT=e421c2e50b81febf639fced51a69e2602593d50d  # bench/peer_throughput.py's CLEANRL_COMMIT
mkdir -p .venvs
if [ ! -x .venvs/sample-factory/bin/python ]; then
  python3 -m venv .venvs/sample-factory
  .venvs/sample-factory/bin/pip install -q "torch==2.13.0" "sample-factory==2.1.1" "numpy<2" psutil
  .venvs/sample-factory/bin/pip install -q --no-deps "nle==1.3.0"
fi
if [ ! -x .venvs/cleanrl/bin/python ]; then
  python3 -m venv --system-site-packages .venvs/cleanrl
  .venvs/cleanrl/bin/pip install -q tyro tensorboard
fi
PPO=".venvs/cleanrl-ppo-${COMMIT:0:8}.py"
if [ ! -f "$PPO" ]; then
  if [ -n "${CLEANRL_PPO:-}" ]; then
    cp "$CLEANRL_PPO" "$PPO"
  else
    curl -fsSL "https://raw.githubusercontent.com/vwxyzjn/cleanrl/$COMMIT/cleanrl/ppo.py" -o "$PPO"
  fi
fi
echo "[peers] ok: $(.venvs/sample-factory/bin/pip list 2>/dev/null | grep -iE '^(sample-factory|nle|gymnasium) ') ; CleanRL ppo.py @${COMMIT:0:8}"
