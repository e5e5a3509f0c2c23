"""Potential-based shaping on hand-made episodes, checked by hand (no Ray).

Every piece runs after RLlib's own AddOneTsToEpisodesAndTruncate, as in PPO's learner
pipeline, so chunk renaming and the artificial last step are RLlib's, not a stand-in's."""

import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.algorithms.bk_ppo.potential_shaping import (
    PotentialScale,
    PotentialShaping,
    shaping_terms,
)
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.running_stats import RunningStd


def steps(obs, rewards, terminated=False):
    """An episode (or chunk) that is still open: it can be cut before it is used."""
    ep = SingleAgentEpisode(
        observations=[np.float32(o) for o in obs[:1]], infos=[{"caption": f"s{obs[0]}"}],
        len_lookback_buffer=0,
    )  # fmt: skip
    for i, (o, r) in enumerate(zip(obs[1:], rewards)):
        ep.add_env_step(np.float32(o), 0, r, infos={"caption": f"s{o}"},
                        terminated=terminated and i == len(rewards) - 1)  # fmt: skip
    return ep


def episode(obs, rewards, terminated):
    return steps(obs, rewards, terminated).to_numpy()


def continue_episode(chunk, obs, rewards, terminated=False):
    """The next chunk of ``chunk``'s episode (RLlib's cut: same id, starts at its last obs)."""
    nxt = chunk.cut()
    for i, (o, r) in enumerate(zip(obs, rewards)):
        nxt.add_env_step(np.float32(o), 0, r, infos={"caption": f"s{o}"},
                         terminated=terminated and i == len(rewards) - 1)  # fmt: skip
    return nxt


def phi_is_the_observation(chunks):
    return [np.asarray(c.observations[:, 0], dtype=np.float64) for c in chunks]


def phi_sums_the_history_in_the_chunk(chunks):
    # A history-dependent potential, as BK's windows are: the sum of every observation since
    # the chunk's start, so the same state gets a different value in the next chunk.
    return [np.cumsum(c.observations[:, 0]).astype(np.float64) for c in chunks]


def shaping_piece(extrinsic_coeff=1.0, **kwargs):
    """The learner piece a bk-* algorithm prepends: the reward rewrite with a shaping term."""
    return RewriteRewards(terms=[PotentialShaping(**kwargs)], extrinsic_coeff=extrinsic_coeff)


def run(episodes, piece=None, **kwargs):
    """PPO's own first piece, then ours, as in the learner pipeline."""
    shared, logger = {}, MetricsLogger()
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=episodes,
                                    shared_data=shared)  # fmt: skip
    kwargs = {"potential_fn": phi_is_the_observation, "normalization": "none", **kwargs}
    piece = piece or shaping_piece(**kwargs)
    piece(rl_module=None, batch={}, episodes=episodes, shared_data=shared, metrics=logger)
    return logger


# --------------------------------------------------------------------- Ng et al.'s convention
def test_ng_terminated_episode_by_hand():
    # Phi(s) = s, gamma 0.5: r' = r + 0.5 * Phi(s') - Phi(s), and Phi(terminal) = 0.
    ep = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    run([ep], gamma=0.5, convention="ng")
    # step 0: 0 + 0.5*1 - 0 = 0.5; step 1: 0 + 0.5*2 - 1 = 0; step 2: 1 + 0 - 2 = -1
    # then PPO's artificial step: reward 0, untouched.
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, -1.0, 0.0])


def test_ng_truncated_chunk_keeps_the_last_potential_for_bootstrapping():
    ep = episode([0, 1, 2], [0.0, 0.0], terminated=False)  # a chunk cut mid-episode
    run([ep], gamma=0.5, convention="ng")
    # step 1: 0 + 0.5*2 - 1 = 0 (Phi(s_2) kept: the value bootstraps there)
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, 0.0])


def test_each_chunk_gets_its_own_potentials_and_the_metrics_say_how_much():
    a = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    b = episode([5, 4], [0.0], terminated=False)
    logger = run([a, b], gamma=1.0, coeff=2.0, convention="ng")
    # a: 2*(1-0), 2*(2-1), 1 + 2*(0-2) ; b: 2*(4-5)
    np.testing.assert_allclose(a.get_rewards(), [2.0, 2.0, -3.0, 0.0])
    np.testing.assert_allclose(b.get_rewards(), [-2.0, 0.0])
    # bonuses: a 2+2-4 = 0, b -2 -> per step -2/4, per chunk -2/2
    assert logger.peek("shaping_reward_mean") == pytest.approx(-0.5)
    assert logger.peek("shaping_return_mean") == pytest.approx(-1.0)
    assert logger.peek("potential_divisor") == 1.0


# ------------------------------------------------------------------------ BK's convention
def test_bk_pays_each_difference_one_step_late_and_never_charges_the_last_step():
    # BK's train_rs.py: F_t = gamma Phi(s_t) - Phi(s_{t-1}); at an episode's start Phi(s_0)
    # stands in for Phi(s_{-1}).
    ep = episode([1, 2, 3, 4], [0.0, 0.0, 1.0], terminated=True)
    run([ep], gamma=0.5, convention="bk")
    # step 0: 0.5*1 - 1 = -0.5; step 1: 0.5*2 - 1 = 0; step 2: 1 + 0.5*3 - 2 = 0.5
    # (Ng would pay 1 + 0 - 3 = -2 on the success step: reaching the goal from Phi 3.)
    np.testing.assert_allclose(ep.get_rewards(), [-0.5, 0.0, 0.5, 0.0])


def test_shaping_terms_bk_uses_the_previous_chunks_potential():
    out = shaping_terms(np.array([4.0, 6.0, 8.0]), gamma=0.5, coeff=1.0, terminated=False,
                        convention="bk", previous=2.0)  # fmt: skip
    np.testing.assert_allclose(out, [0.5 * 4 - 2, 0.5 * 6 - 4])


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="valid: bk, ng"):
        PotentialShaping(potential_fn=phi_is_the_observation, gamma=0.9, convention="x")


# ------------------------------------------------- an episode that spans two train batches
@pytest.mark.parametrize("convention", ["ng", "bk"])
def test_an_episode_cut_across_batches_telescopes_with_a_history_dependent_potential(convention):
    # One piece (one learner) sees batch 1, then batch 2; RLlib renames the chunk
    # "<id>_0" in both, so only the episode's own id joins them. With gamma 1 the shaping
    # of a whole episode telescopes: Ng's to -Phi(s_0) (Phi(terminal) = 0); BK's to
    # Phi(s_{T-1}) - Phi(s_0) (its last difference is never charged).
    first = steps([1, 2, 3], [0.0, 0.0])
    second = continue_episode(first, [4, 5], [0.0, 1.0], terminated=True)
    first, second = first.to_numpy(), second.to_numpy()
    piece = shaping_piece(potential_fn=phi_sums_the_history_in_the_chunk, gamma=1.0,
                          normalization="none", convention=convention)  # fmt: skip
    run([first], piece)
    run([second], piece)
    shaping = np.concatenate([first.get_rewards()[:-1], second.get_rewards()[:-1]])
    shaping -= [0.0, 0.0, 0.0, 1.0]
    # Phi: chunk 1 gives 1, 3, 6; chunk 2 would give its first state 3 (less history) but
    # starts from the 6 chunk 1 gave the same state, then 3+4 = 7 and 12 from its own sums.
    if convention == "ng":
        np.testing.assert_allclose(shaping, [3 - 1, 6 - 3, 7 - 6, 0 - 7])
        assert shaping.sum() == pytest.approx(-1.0)  # -Phi(s_0)
    else:
        np.testing.assert_allclose(shaping, [1 - 1, 3 - 1, 6 - 3, 7 - 6])
        assert shaping.sum() == pytest.approx(7 - 1)


def test_without_the_episode_id_the_next_chunk_would_restart():
    # The same chunks, seen by two pieces (no memory shared): the second chunk's first state
    # then gets the shorter history's value, 3 instead of 6, and the cut costs 3 of shaping.
    first = steps([1, 2, 3], [0.0, 0.0])
    second = continue_episode(first, [4, 5], [0.0, 1.0], terminated=True).to_numpy()
    first = first.to_numpy()
    for chunk in (first, second):
        run([chunk], potential_fn=phi_sums_the_history_in_the_chunk, gamma=1.0,
            convention="ng")  # fmt: skip
    total = first.get_rewards()[:-1].sum() + second.get_rewards()[:-1].sum() - 1.0
    assert total == pytest.approx(-1.0 + 3.0)


def test_finished_episodes_are_forgotten():
    piece = shaping_piece(potential_fn=phi_is_the_observation, gamma=0.9)
    (shaping,) = piece.terms
    open_chunk, other = steps([1, 2], [0.0]), episode([7, 8], [0.0], terminated=False)
    done = episode([0, 1], [1.0], terminated=True)
    nxt = continue_episode(open_chunk, [3], [0.0]).to_numpy()
    open_id, other_id = open_chunk.id_, other.id_
    run([open_chunk.to_numpy(), done, other], piece)
    assert set(shaping._carry) == {open_id, other_id}  # `done` terminated: never kept
    run([nxt], piece)
    assert set(shaping._carry) == {open_id}  # `other` is absent: it ended (a time limit)


# ------------------------------------------------------------------------------ the scale
def test_bk_normaliser_divides_by_the_std_of_the_discounted_running_sum():
    # Phi = 1 on 3 states, gamma 0.5: running sums 1, 1.5, 1.75 (the last state, after the
    # last step, is not a state the agent acted in and is not counted).
    ep = episode([1, 1, 1, 1], [0.0, 0.0, 0.0], terminated=False)
    logger = run([ep], gamma=0.5, normalization="discounted-sum-std", convention="ng")
    divisor = np.std([1.0, 1.5, 1.75])
    assert logger.peek("potential_divisor") == pytest.approx(divisor, rel=1e-6)
    np.testing.assert_allclose(ep.get_rewards()[:-1], [(0.5 - 1) / divisor] * 3, rtol=1e-6)


def test_the_running_sum_continues_across_chunks_of_one_episode():
    scale = PotentialScale("discounted-sum-std", gamma=0.5)
    scale.update([("e", np.array([1.0, 1.0]))])
    divisor = scale.update([("e", np.array([1.0]))])
    assert divisor == pytest.approx(np.std([1.0, 1.5, 1.75]), rel=1e-6)


def test_std_normaliser_and_none():
    assert PotentialScale("std", 0.9).update([("e", np.array([0.0, 2.0]))]) \
        == pytest.approx(1.0, rel=1e-6)
    assert PotentialScale("none", 0.9).update([("e", np.array([5.0, 9.0]))]) == 1.0
    with pytest.raises(ValueError, match="valid: discounted-sum-std, std, none"):
        PotentialScale("max", 0.9)


# ------------------------------------------------------------------------------- plumbing
def test_one_potential_call_per_train_batch():
    calls = []

    def counting(chunks):
        calls.append(len(chunks))
        # Captions, actions and the real steps only (not PPO's artificial one) reach the source.
        assert chunks[0].captions == ["s0", "s1"] and list(chunks[1].actions) == [0, 0]
        assert chunks[0].terminated and not chunks[1].terminated
        return phi_is_the_observation(chunks)

    eps = [episode([0, 1], [0.0], True), episode([2, 3, 4], [0.0, 0.0], False)]
    run(eps, potential_fn=counting, gamma=0.9)
    assert calls == [2]


def test_running_std_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    data = rng.normal(3.0, 2.0, size=1000)
    rs = RunningStd()
    for chunk in np.array_split(data, 7):
        rs.update(chunk)
    assert rs.std == pytest.approx(data.std(), rel=1e-9)
    assert rs.mean == pytest.approx(data.mean(), rel=1e-9)


def test_extrinsic_coefficient_scales_only_the_env_reward():
    # BK trains on 10 * r_env + shaping; the logged shaping excludes the scaled env reward.
    ep = episode([0, 1, 2, 3], [0.0, 0.0, 1.0], terminated=True)
    logger = run([ep], gamma=0.5, extrinsic_coeff=10.0, convention="ng")
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, 10.0 - 2.0, 0.0])
    assert logger.peek("shaping_return_mean") == pytest.approx(0.5 + 0.0 - 2.0)
