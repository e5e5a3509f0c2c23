"""ShapedPPOConfig inside a real PPO learner: the shaping piece sits between PPO's
artificial-step piece and GAE, builds its source lazily and reports beside the env return."""

import numpy as np
import pytest

from rl_bk.experiments.ppo_config import base_ppo_config
from rl_bk.experiments.task_config import load_task
from rl_bk.methods.bk import ShapedPPOConfig, sources
from rl_bk.methods.bk.potential_shaping import ENV_SLOTS, SHAPING_REWARD_MEAN

pytestmark = pytest.mark.ray


class CaptionLength:
    """A stand-in source that reads captions, as LLM-derived potentials do."""

    name = "caption-length"

    def __init__(self, path, scale=100.0):
        self.scale, self.calls = scale, 0

    def __call__(self, chunks):
        self.calls += 1
        return [np.array([len(c) / self.scale for c in chunk.captions]) for chunk in chunks]

    def metrics(self):
        return {"calls": self.calls}


def test_shaped_ppo_trains_and_logs_the_shaping_beside_the_env_return(ray_session, monkeypatch):
    # The learner is local (num_learners=0), so a loader registered here is found.
    monkeypatch.setitem(sources.LOADERS, "caption-length", f"{__name__}:CaptionLength")
    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    # One remote env runner: its episodes travel to the learner as they do in a sweep.
    config = base_ppo_config(task, 0, {}, config=ShapedPPOConfig()).env_runners(num_env_runners=1)
    config.training(potential=sources.SourceSpec("caption-length", "unused"), shaping_coeff=1.0)
    algo = config.build_algo()
    try:
        result = algo.train()
        pipeline = algo.learner_group._learner._learner_connector
        names = [type(c).__name__ for c in pipeline.connectors]
    finally:
        algo.stop()
    # Shaping right after PPO's artificial step and before GAE reads the rewards.
    first = names.index("AddOneTsToEpisodesAndTruncate")  # after TimeLimitAsTermination
    assert first <= 1 and names[first + 1] == "RewriteRewards"
    # GAE reads them in time order; only then are the rows shuffled (BK's tasks shuffle
    # every epoch's minibatches, the first included)
    assert names[-2:] == ["GeneralAdvantageEstimation", "ShuffleTrainBatch"]
    learners = result["learners"]
    shaping = learners[SHAPING_REWARD_MEAN]
    assert np.isfinite(shaping) and shaping != 0.0  # captions change, so potentials do
    assert learners["potential/calls"] == 1  # one source call per train batch
    # Every env slot's episodes reached the learner tagged (BK's per-slot normaliser).
    assert learners[ENV_SLOTS] == config.num_envs_per_env_runner


def test_shaped_ppo_with_a_potential_that_is_no_source_is_a_clear_config_error():
    config = ShapedPPOConfig().environment("CartPole-v1").training(potential="bk-code")
    with pytest.raises(ValueError, match="must be a SourceSpec"):
        config.validate()
    # None is no shaping: BK's PPO, the env reward times extrinsic_coeff only.
    ShapedPPOConfig().environment("CartPole-v1").training(potential=None).validate()
