"""A method's reward is the same under PPO and APPO: the learner pipelines each config builds
put the same reward rewrite right after RLlib's artificial-step piece, and the same episodes
come out with the same rewards (no Ray: the pipelines' pieces run on hand-made episodes)."""

import copy

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.methods.bk import ShapedAPPOConfig, ShapedPPOConfig, SourceSpec

OBS = gym.spaces.Box(-1e3, 1e3, (1,), np.float32)
ACTIONS = gym.spaces.Discrete(3)


class HistoryPotential:
    """Phi = the running sum of the observations since the chunk's start: history-dependent,
    as BK's windows are, so a piece run twice or out of place would change the rewards."""

    name = "stand-in"

    def __call__(self, chunks):
        return [np.cumsum(c.observations[:, 0]).astype(np.float64) for c in chunks]

    def metrics(self):
        return {}


def learner_pipeline(config):
    """The pieces a learner runs, in order: PPO's learner prepends its artificial-step piece
    when it builds (PPOLearner.build); APPO's config has already put it in."""
    pipeline = config.build_learner_connector(OBS, ACTIONS)
    if not any(isinstance(c, AddOneTsToEpisodesAndTruncate) for c in pipeline.connectors):
        pipeline.prepend(AddOneTsToEpisodesAndTruncate())
    return pipeline.connectors


def until_rewrite(pieces):
    """The pieces up to and including the reward rewrite (what rewards depend on)."""
    end = next(i for i, c in enumerate(pieces) if isinstance(c, RewriteRewards))
    return pieces[: end + 1]


def episodes():
    """A terminated episode and one cut in two chunks, as a train batch can hold them."""
    rng = np.random.default_rng(0)
    done = SingleAgentEpisode(observations=[np.float32([0.0])], len_lookback_buffer=0)
    for i in range(6):
        done.add_env_step(np.float32([rng.normal()]), 0, float(i == 5), terminated=i == 5)
    running = SingleAgentEpisode(observations=[np.float32([1.0])], len_lookback_buffer=0)
    for _ in range(4):
        running.add_env_step(np.float32([rng.normal()]), 1, 0.0)
    later = running.cut()
    for _ in range(3):
        later.add_env_step(np.float32([rng.normal()]), 2, 0.0)
    return [done.to_numpy(), running.to_numpy(), later.to_numpy()]


def rewards_after(pieces, batch_episodes):
    shared, logger = {}, MetricsLogger()
    for piece in until_rewrite(pieces):
        piece(rl_module=None, batch={}, episodes=batch_episodes, shared_data=shared, metrics=logger)
    return [ep.get_rewards().copy() for ep in batch_episodes]


@pytest.fixture
def stand_in_potential(monkeypatch):
    monkeypatch.setattr(SourceSpec, "build", lambda self: HistoryPotential())
    return SourceSpec("bk-code", "/nowhere")


def shaped(config_class, spec):
    return config_class().training(
        potential=spec,
        shaping_coeff=0.5,
        extrinsic_coeff=10.0,
        gamma=0.9,
        potential_normalization="none",
    )


def test_shaped_rewards_are_the_same_under_ppo_and_appo(stand_in_potential):
    ppo = learner_pipeline(shaped(ShapedPPOConfig, stand_in_potential))
    appo = learner_pipeline(shaped(ShapedAPPOConfig, stand_in_potential))
    # The rewrite sits right after the artificial-step piece in both.
    for pieces in (ppo, appo):
        names = [type(c).__name__ for c in pieces]
        assert names.index("RewriteRewards") == names.index("AddOneTsToEpisodesAndTruncate") + 1
    batch = episodes()
    by_ppo = rewards_after(ppo, copy.deepcopy(batch))
    by_appo = rewards_after(appo, copy.deepcopy(batch))
    for a, b in zip(by_ppo, by_appo):
        np.testing.assert_array_equal(a, b)
    # ... and the rewrite did something: 10 x r plus shaping, the artificial step left at 0.
    untouched = [ep.get_rewards() for ep in batch]
    assert not np.allclose(by_ppo[0][:-1], 10 * untouched[0])
    assert all(r[-1] == 0.0 for r in by_ppo)


def test_plain_extrinsic_scaling_is_the_same_under_ppo_and_appo():
    configs = [c().training(extrinsic_coeff=10.0) for c in (ShapedPPOConfig, ShapedAPPOConfig)]
    results = [rewards_after(learner_pipeline(c), episodes()) for c in configs]
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    assert results[0][0][5] == 10.0  # the terminal reward, 10 x


def online_configs():
    from rl_bk.methods.ellm import ELLMAPPOConfig, ELLMPPOConfig
    from rl_bk.methods.oni import ONIAPPOConfig, ONIPPOConfig
    from rl_bk.methods.ptgm import PTGMAPPOConfig, PTGMPPOConfig

    return [
        (ELLMPPOConfig, ELLMAPPOConfig, {"family": "crafter", "ellm_coeff": 0.5}),
        (ONIPPOConfig, ONIAPPOConfig, {"family": "nethack", "reward_type": "cosine-bow"}),
        (PTGMPPOConfig, PTGMAPPOConfig, {"ptgm_dir": "/nowhere", "prior_kl_coeff": 0.1}),
    ]


@pytest.mark.parametrize(
    "ppo_class, appo_class, settings", online_configs(), ids=["ellm", "oni", "ptgm"]
)
def test_every_method_puts_the_same_rewrite_in_the_same_place(ppo_class, appo_class, settings):
    # The reward terms come from one mixin: the same terms, with the same settings, right
    # after the artificial-step piece in both pipelines.
    rewrites = []
    for config_class in (ppo_class, appo_class):
        pieces = learner_pipeline(config_class().training(**settings))
        names = [type(c).__name__ for c in pieces]
        assert names.index("RewriteRewards") == names.index("AddOneTsToEpisodesAndTruncate") + 1
        rewrites.append(next(c for c in pieces if isinstance(c, RewriteRewards)))
    ppo_rewrite, appo_rewrite = rewrites
    assert (
        [type(t).__name__ for t in ppo_rewrite.terms]
        == [type(t).__name__ for t in appo_rewrite.terms]
        != []
    )
    assert ppo_rewrite.extrinsic_coeff == appo_rewrite.extrinsic_coeff
