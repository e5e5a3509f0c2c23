"""Rewriting rewards on a numpy'd episode prints nothing: RLlib checks each reward it sets
against its Box space, and gymnasium would warn once per chunk and batch that it casts the
scalar."""

import warnings

import numpy as np
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from rl_bk.connectors.learner.reward_rewrite import RewriteRewards


class _Constant:
    def __call__(self, chunks, rl_module):
        return [np.full(c.steps, 0.5) for c in chunks]

    def batch_metrics(self):
        return {}


def test_rewriting_rewards_warns_about_nothing():
    ep = SingleAgentEpisode(
        observations=[np.float32(0)] * 4,
        actions=[0] * 3,
        rewards=[0.0, 1.0, 0.0],
        terminated=True,
        len_lookback_buffer=0,
    ).to_numpy()
    shared = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RewriteRewards(terms=[_Constant()], extrinsic_coeff=2.0)(
            rl_module=None, batch={}, episodes=[ep], shared_data=shared
        )
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 2.5, 0.5, 0.0])
