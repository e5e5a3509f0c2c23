"""PTGM end to end, offline: the BabyAI bot collects, pre-training builds the codebook, the
low-level policy and the prior, and the high-level PPO trains with and without the KL term."""

import json

import numpy as np
import pytest

from rl_bk.experiments import knowledge_pipeline as pipeline
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.ptgm.env_steps import HIGH_LEVEL_STEPS
from rl_bk.methods.ptgm.prior_kl import KL_REWARD_MEAN, PRIOR_KL_MEAN
from rl_bk.methods.registry import get_method

pytestmark = pytest.mark.ray


def test_ptgm_pretrains_then_trains_counting_env_steps(ray_session, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "knowledge"))
    task = load_task("babyai-gotolocal-redball-s20-ptgm", smoke=True)
    # Observation embeddings: no MiniLM pass over the captions in a test.
    ptgm = task.ptgm.model_copy(update={"embedding": "observation"})
    runners = task.env_runners.model_copy(update={"num_env_runners": 0})
    task = task.model_copy(update={"ptgm": ptgm, "env_runners": runners})

    folder = pipeline.build_knowledge(task, "ptgm")
    done = json.loads((folder / pipeline.DONE).read_text())
    assert done["kind"] == "ptgm" and done["labels"] is None
    assert {"ptgm.pt", "codebook.npz", "ptgm.json"} <= {p.name for p in folder.iterdir()}

    learned = {}
    for method in ("ptgm", "ptgm-no-kl"):
        algo = get_method(method).build(task, 0, {}).build_algo()
        try:
            result = algo.train()
        finally:
            algo.stop()
        # Env steps are the low-level steps: k per decision (fewer at an episode's end).
        decisions = result[HIGH_LEVEL_STEPS]
        steps = result["num_env_steps_sampled_lifetime"]
        assert decisions < steps <= task.ptgm.low_level_steps * decisions
        learned[method] = result["learners"]
    assert learned["ptgm"][PRIOR_KL_MEAN] > 0
    assert learned["ptgm"][KL_REWARD_MEAN] == pytest.approx(
        -task.ptgm.prior_kl_coeff * learned["ptgm"][PRIOR_KL_MEAN]
    )
    assert learned["ptgm-no-kl"][KL_REWARD_MEAN] == 0
    assert np.isfinite(learned["ptgm"]["default_policy"]["total_loss"])


def test_bc_ppo_starts_from_a_policy_cloned_on_ptgms_dataset(ray_session, tmp_path, monkeypatch):
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID

    from rl_bk.methods.bc.cloning import read_bc_data

    monkeypatch.setenv("RLBK_KNOWLEDGE_DIR", str(tmp_path / "knowledge"))
    task = load_task("babyai-gotolocal-redkey-s20-ptgm", smoke=True)
    runners = task.env_runners.model_copy(update={"num_env_runners": 0})
    task = task.model_copy(update={"env_runners": runners})
    folder = pipeline.build_knowledge(task, "bc")
    obs, actions, _ = read_bc_data(folder)

    # Enough epochs for 40 smoke episodes, every one of them trained on.
    params = {"bc_epochs": 300, "bc_lr": 3e-3, "bc_holdout": 0.0}
    algo = get_method("bc-ppo").build(task, 0, params).build_algo()
    try:
        learner = algo.learner_group._learner.module[DEFAULT_MODULE_ID]
        sampler = algo.env_runner.module
        x = torch.from_numpy(obs[:256])
        with torch.no_grad():
            cloned = learner.forward_inference({"obs": x})["action_dist_inputs"]
            sampling = sampler.forward_inference({"obs": x})["action_dist_inputs"]
        # The env runner samples with the cloned policy from its first step.
        torch.testing.assert_close(sampling, cloned)
        agreement = (cloned.argmax(1).numpy() == actions[:256]).mean()
        majority = np.bincount(actions[:256]).max() / 256
        assert agreement > majority + 0.1  # more than "always go forward"
        result = algo.train()
    finally:
        algo.stop()
    # The cloning report rides along in every result.
    assert result["bc"]["pairs"] == len(actions)
    assert result["bc"]["train_accuracy"] > majority
    assert result["num_env_steps_sampled_lifetime"] > 0
