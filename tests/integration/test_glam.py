"""GLAM through RLlib: the LLM policy samples prompt observations and PPO updates it (the
tiny model built in code; SmolLM2 is too slow for a test here: bench/glam_throughput.py)."""

import numpy as np
import pytest

from rl_bk.experiments.task_config import load_task
from rl_bk.methods.registry import get_method

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


def test_a_remote_env_runner_gets_only_the_adapters_and_scores_like_the_learner(ray_session):
    """The GPU recipe's layout, as its --smoke runs it on the CPU (tiny model, one remote env
    runner): after RLlib's weight sync, what travelled holds no frozen LLM weight, and the
    runner's module, which built its own copy of the LLM, gives the learner's scores."""
    import torch
    from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE
    from ray.rllib.core.columns import Columns

    from rl_bk.methods.glam.prompt_observation import build_prompt, encode_prompt

    task = load_task("babyai-gotoredball-glam-gpu", smoke=True)
    assert task.glam.model == "tiny" and task.env_runners.num_env_runners == 1
    # A large lr: one update moves the adapters enough to change the scores visibly.
    algo = get_method("glam").build(task, 0, {"lr": 1e-2}).build_algo()
    prompts = [
        build_prompt("go to the red ball", ["You see a red ball 2 steps forward"], []),
        build_prompt(
            "go to the red ball",
            ["You see a wall 1 step forward", "You see a red ball 1 step left"],
            ["turn left"],
        ),
    ]
    obs = np.stack([encode_prompt(p, 1024) for p in prompts])

    def scores(module):
        with torch.no_grad():
            batch = {Columns.OBS: torch.from_numpy(obs)}
            return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()

    def runner_scores():
        return algo.env_runner_group.foreach_env_runner(
            lambda runner: scores(runner.module),  # an env runner's module is single-agent
            local_env_runner=False,
        )[0]

    try:
        initial = runner_scores()
        algo.train()  # PPO's training_step syncs the learner's weights to the runner after it
        (learner,) = [
            r.get()
            for r in algo.learner_group.foreach_learner(
                lambda learner: scores(learner.module["default_policy"])
            )
        ]
        after = runner_scores()
        synced = algo.learner_group.get_state(
            components=f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}",
            inference_only=True,
        )[COMPONENT_LEARNER][COMPONENT_RL_MODULE]["default_policy"]
    finally:
        algo.stop()
    assert isinstance(synced.pop("glam_frozen_fingerprint"), float)
    assert synced and all("lora_" in k or k.startswith("value_head.") for k in synced)
    assert np.abs(learner - initial).max() > 1e-4  # the update moved the scores
    np.testing.assert_allclose(after, learner, rtol=0, atol=1e-6)


def _gpu_recipe_model() -> str:
    from pathlib import Path

    return str(Path(load_task("babyai-gotoredball-glam-gpu").glam.model).expanduser())


def _gpu_skip_reason() -> str | None:
    import os

    import torch

    if not torch.cuda.is_available():
        return "the GPU recipe needs a CUDA GPU (torch sees none)"
    if not os.path.isfile(os.path.join(_gpu_recipe_model(), "config.json")):
        return f"the GPU recipe's model folder {_gpu_recipe_model()} is not here"
    return None


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_skip_reason() is not None, reason=str(_gpu_skip_reason()))
def test_gpu_recipe_trains_on_the_gpu(ray_session):
    """The GPU recipe as written, one small iteration: the learner's LLM on the GPU."""
    import ray

    if ray.cluster_resources().get("GPU", 0) < 1:
        pytest.skip("the test session's Ray has no GPU")
    task = load_task("babyai-gotoredball-glam-gpu")
    algo = get_method("glam").build(task, 0, {"train_batch_size_per_learner": 64}).build_algo()
    try:
        result = algo.train()
        (device,) = [
            r.get()
            for r in algo.learner_group.foreach_learner(
                lambda learner: str(learner.module["default_policy"].action_ids.device)
            )
        ]
    finally:
        algo.stop()
    assert device.startswith("cuda")
    assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])
