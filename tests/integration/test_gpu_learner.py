"""The learner on a GPU (a task's ``learner.num_gpus``): BK's conv network, PPO's loss and the
reward pieces of the learner connector update there (CI has no GPU: skipped with its reason)."""

import numpy as np
import pytest

from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method

pytestmark = pytest.mark.ray


def _no_gpu() -> bool:
    import torch

    return not torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(_no_gpu(), reason="the learner on a GPU needs a CUDA GPU (torch sees none)")
@pytest.mark.parametrize("method", ["ppo", "rnd"])
def test_the_learner_updates_on_the_gpu(ray_session, method):
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    task = task.model_copy(update={"learner": task.learner.model_copy(update={"num_gpus": 1})})
    algo = get_method(method).build(task, 0, {}).build_algo()
    try:
        before = algo.learner_group.get_weights()["default_policy"]  # numpy, off the GPU
        result = algo.train()
        (device,) = [
            r.get()
            for r in algo.learner_group.foreach_learner(
                lambda lrn: str(next(lrn.module["default_policy"].parameters()).device)
            )
        ]
        after = algo.learner_group.get_weights()["default_policy"]
    finally:
        algo.stop()
    assert device.startswith("cuda")
    learner = result["learners"]["default_policy"]
    assert np.isfinite(learner["policy_loss"]) and np.isfinite(learner["vf_loss"])
    assert any(not np.allclose(before[k], after[k]) for k in before)  # the update moved it
