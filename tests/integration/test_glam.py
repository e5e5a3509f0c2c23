"""GLAM through RLlib: the LLM policy samples prompt observations and PPO updates it (the
tiny model built in code; SmolLM2 is too slow for a test here: bench/glam_throughput.py)."""

import numpy as np
import pytest

from rl_bk.experiments.methods import get_method
from rl_bk.experiments.task_config import load_task

pytestmark = pytest.mark.ray


@pytest.mark.parametrize("lora_r", [4, None])
def test_glam_samples_and_updates_the_language_model(ray_session, lora_r):
    task = load_task("babyai-gotoredball-glam", smoke=True)
    task = task.model_copy(update={"glam": task.glam.model_copy(update={"model": "tiny"})})
    algo = get_method("glam").build(task, 0, {"lora_r": lora_r}).build_algo()
    try:
        module = algo.get_module()
        before = {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad}
        result = algo.train()
        after = dict(module.named_parameters())
    finally:
        algo.stop()
    assert result["env_runners"]["num_env_steps_sampled"] >= 32
    learner = result["learners"]["default_policy"]
    assert np.isfinite(learner["policy_loss"]) and np.isfinite(learner["vf_loss"])
    changed = [n for n, p in before.items() if not np.allclose(p, after[n].detach())]
    assert any("value" in n for n in changed)  # the value head learned
    if lora_r is None:  # full fine-tuning moves the LLM's own weights
        assert any("layers" in n and "lora" not in n for n in changed)
    else:  # LoRA moves only the adapters (and the value head)
        assert all("lora" in n or "value" in n for n in changed)
