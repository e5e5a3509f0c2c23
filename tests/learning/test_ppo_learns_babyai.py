"""Opt-in (`pytest -m learning`): PPO learns an easy BabyAI-Text level.

BabyAI-Text-GoToRedBallNoDists-v0 (8×8 room, the red ball alone): measured here, PPO with the
task's settings first reached a 0.9 success rate (last 100 episodes) at ~31k env steps on
seed 0; random play succeeds in well under half of the episodes. The budget below is about
5× that. Takes 1–4 minutes on 2 CPUs.
"""

import pytest

from rl_bk import metrics as M
from rl_bk.experiments.methods import get_method
from rl_bk.experiments.task_config import load_task

pytestmark = [pytest.mark.learning, pytest.mark.ray]

BUDGET_ENV_STEPS = 150_000
TARGET_SUCCESS = 0.9


def test_ppo_reaches_0_9_success_on_gotoredballnodists(ray_session):
    task = load_task("babyai-gotoredballnodists")
    algo = get_method("ppo").build(task, 0, {}).build_algo()
    history = []
    try:
        while True:
            result = algo.train()
            steps = result[M.ENV_STEPS]
            success = result["env_runners"].get("success_rate", 0.0)
            history.append((steps, round(success, 2)))
            if success >= TARGET_SUCCESS or steps >= BUDGET_ENV_STEPS:
                break
    finally:
        algo.stop()
    assert success >= TARGET_SUCCESS, f"success by env steps: {history}"
    print(f"success {success:.2f} at {steps:.0f} env steps")  # shown with pytest -s
