"""Potential-based shaping on hand-made episodes, checked by hand (no Ray).

Every piece runs after RLlib's own AddOneTsToEpisodesAndTruncate, as in PPO's learner
pipeline, so chunk renaming and the artificial last step are RLlib's, not a stand-in's."""

from types import SimpleNamespace

import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.callbacks.env_slot import tag_env_slot
from rl_bk.connectors.learner.episode_chunks import EpisodeChunk, Stream, by_env_slot
from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
from rl_bk.methods.bk.potential_shaping import (
    PotentialScale,
    PotentialShaping,
    shaping_terms,
)
from rl_bk.running_stats import RunningStd


def steps(obs, rewards, terminated=False):
    """An episode (or chunk) that is still open: it can be cut before it is used."""
    ep = SingleAgentEpisode(
        observations=[np.float32(o) for o in obs[:1]],
        infos=[{"caption": f"s{obs[0]}"}],
        len_lookback_buffer=0,
    )
    for i, (o, r) in enumerate(zip(obs[1:], rewards)):
        ep.add_env_step(
            np.float32(o),
            0,
            r,
            infos={"caption": f"s{o}"},
            terminated=terminated and i == len(rewards) - 1,
        )
    return ep


def episode(obs, rewards, terminated):
    return steps(obs, rewards, terminated).to_numpy()


def continue_episode(chunk, obs, rewards, terminated=False):
    """The next chunk of ``chunk``'s episode (RLlib's cut: same id, starts at its last obs)."""
    nxt = chunk.cut()
    for i, (o, r) in enumerate(zip(obs, rewards)):
        nxt.add_env_step(
            np.float32(o),
            0,
            r,
            infos={"caption": f"s{o}"},
            terminated=terminated and i == len(rewards) - 1,
        )
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
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=episodes, shared_data=shared)
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
    # BK's train_rs.py: F_t = gamma Phi(s_t) - Phi(s_{t-1}); a slot's first step ever
    # subtracts 0 (BK's buffer starts as zeros).
    ep = episode([1, 2, 3, 4], [0.0, 0.0, 1.0], terminated=True)
    run([ep], gamma=0.5, convention="bk")
    # step 0: 0.5*1 - 0 = 0.5; step 1: 0.5*2 - 1 = 0; step 2: 1 + 0.5*3 - 2 = 0.5
    # (Ng would pay 1 + 0 - 3 = -2 on the success step: reaching the goal from Phi 3.)
    np.testing.assert_allclose(ep.get_rewards(), [0.5, 0.0, 0.5, 0.0])


def test_shaping_terms_bk_uses_the_previous_chunks_potential():
    out = shaping_terms(
        np.array([4.0, 6.0, 8.0]),
        gamma=0.5,
        coeff=1.0,
        terminated=False,
        convention="bk",
        previous=2.0,
    )
    np.testing.assert_allclose(out, [0.5 * 4 - 2, 0.5 * 6 - 4])


def test_unknown_convention_is_refused():
    with pytest.raises(ValueError, match="valid: bk, ng"):
        PotentialShaping(potential_fn=phi_is_the_observation, gamma=0.9, convention="x")


# ------------------------------------------------- an episode that spans two train batches
class WindowSum:
    """A history-dependent potential, as BK's windows are: the sum of the window's
    observations (the last ``horizon`` states the source is given)."""

    def __init__(self, horizon):
        self.horizon, self.seen = horizon, []

    def __call__(self, chunks):
        self.seen.extend(chunks)
        out = []
        for c in chunks:
            obs = c.observations[:, 0].astype(np.float64)
            out.append(
                np.array([obs[max(0, t - self.horizon + 1) : t + 1].sum() for t in range(len(obs))])
            )
        return out


@pytest.mark.parametrize("convention", ["ng", "bk"])
def test_an_episode_cut_across_batches_is_shaped_as_in_one_piece(convention):
    # One piece (one learner) sees batch 1, then batch 2; RLlib renames the chunk
    # "<id>_0" in both, so only the episode's own id joins them: the second chunk's first
    # windows read the first chunk's states, and the shaping is the whole episode's.
    first = steps([1, 2, 3], [0.0, 0.0])
    second = continue_episode(first, [4, 5], [0.0, 1.0], terminated=True)
    first, second = first.to_numpy(), second.to_numpy()
    whole = episode([1, 2, 3, 4, 5], [0.0, 0.0, 0.0, 1.0], terminated=True)
    kwargs = dict(gamma=0.9, normalization="none", convention=convention, episode_start="short")
    piece = shaping_piece(potential_fn=WindowSum(3), **kwargs)
    run([first], piece)
    run([second], piece)
    run([whole], potential_fn=WindowSum(3), **kwargs)
    cut = np.concatenate([first.get_rewards()[:-1], second.get_rewards()[:-1]])
    np.testing.assert_allclose(cut, whole.get_rewards()[:-1])
    # Phi (windows of 3): 1, 3, 6, 9, 12; by hand for Ng: 0.9*3-1, 0.9*6-3, 0.9*9-6,
    # 1 + 0 - 9 (terminal); for BK: 0.9*1-0, 0.9*3-1, 0.9*6-3, 1 + 0.9*9-6.
    by_hand = [1.7, 2.4, 2.1, -8.0] if convention == "ng" else [0.9, 1.7, 2.4, 3.1]
    np.testing.assert_allclose(cut, by_hand)


def test_without_the_episode_id_the_next_chunk_would_lose_its_history():
    # The same chunks, seen by two pieces (no memory shared): the second chunk's first state
    # then gets a shorter window, Phi 3 instead of 6, and its first steps' shaping changes.
    first = steps([1, 2, 3], [0.0, 0.0])
    second = continue_episode(first, [4, 5], [0.0, 1.0], terminated=True).to_numpy()
    first = first.to_numpy()
    for chunk in (first, second):
        run([chunk], potential_fn=WindowSum(3), gamma=1.0, convention="ng", episode_start="short")
    # second alone: Phi 3, 7, 12 -> (7-3), 1 + (0-7)
    np.testing.assert_allclose(second.get_rewards()[:-1], [4.0, -6.0])


def test_an_episode_starts_with_its_first_state_and_action_repeated_as_bk_fills_its_buffer():
    source = WindowSum(3)
    ep = SingleAgentEpisode(
        observations=[np.float32(2)], infos=[{"caption": "s2"}], len_lookback_buffer=0
    )
    ep.add_env_step(np.float32(5), 1, 0.0, infos={"caption": "s5"})
    ep.add_env_step(np.float32(7), 2, 1.0, infos={"caption": "s7"}, terminated=True)
    ep = ep.to_numpy()
    run([ep], potential_fn=source, gamma=1.0, convention="ng")
    (seen,) = source.seen
    assert seen.captions == ["s2", "s2", "s2", "s5", "s7"]
    assert list(seen.actions) == [1, 1, 1, 2]  # a_0 stands in for the actions before s_0
    # Phi = 2+2+2, 2+2+5, 2+5+7 (no history before s_0: "short" would give 2, 7, 14)
    np.testing.assert_allclose(ep.get_rewards()[:-1], [9 - 6, 1 + 0 - 9])


def test_finished_episodes_are_forgotten():
    piece = shaping_piece(potential_fn=WindowSum(2), gamma=0.9)
    (shaping,) = piece.terms
    open_chunk, other = steps([1, 2], [0.0]), episode([7, 8], [0.0], terminated=False)
    done = episode([0, 1], [1.0], terminated=True)
    open_id, other_id = open_chunk.id_, other.id_
    run([open_chunk.to_numpy(), done, other], piece)
    assert set(shaping.history._kept) == {open_id, other_id}  # `done` terminated: not kept
    assert shaping.history._kept[open_id].captions == ["s1"]


# ---------------------------------------------------- BK's env slots, checked against its loop
class BKRunningMeanStd:
    """gymnasium's RunningMeanStd, which BK's utils/normalizer.py imports: mean 0, var 1 over
    a pseudo-count of 1e-4 to start, then Chan et al.'s update per batch."""

    def __init__(self):
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x):
        batch_mean, batch_var, n = x.mean(), x.var(), x.size
        delta, total = batch_mean - self.mean, self.count + n
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean, self.var, self.count = self.mean + delta * n / total, m2 / total, total


def bk_shaped_rewards(updates, gamma):
    """BK's train_rs.py (lines 168-175), transcribed: each update's (num_steps, num_envs)
    potentials in, its (num_steps, num_envs) shaping terms out."""
    num_steps, num_envs = updates[0].shape
    intrinsic = np.zeros((num_steps, num_envs))
    rewems, rms, out = None, BKRunningMeanStd(), []
    for computed in updates:
        intrinsic = np.concatenate([intrinsic[-1:], computed], axis=0)
        per_step = []
        for row in intrinsic:
            rewems = row.copy() if rewems is None else rewems * gamma + row
            per_step.append(rewems)
        rms.update(np.array(per_step).reshape(-1))
        intrinsic = intrinsic / np.sqrt(rms.var)
        out.append(gamma * intrinsic[1:] - intrinsic[:-1])
    return out


def tagged(ep, runner, env_index):
    """What the env runner's ``on_episode_start`` callback writes into a new episode."""
    tag_env_slot(episode=ep, env_runner=SimpleNamespace(worker_index=runner), env_index=env_index)
    return ep


def test_bk_shaping_matches_bk_loop_over_two_slots_and_two_batches():
    # Two env slots, 4 steps each per batch (BK: num_envs 2, num_steps 4), Phi(s) = s.
    # Slot 0: episode A (3 steps, terminated), then B (1 step in batch 1, 4 in batch 2).
    # Slot 1: episode C runs through both batches. Rows of BK's buffer: the state each step
    # was taken in.
    gamma = 0.9
    a = tagged(steps([1, 2, 3, 4], [0.0, 0.0, 0.0], terminated=True), 1, 0)
    b = tagged(steps([6, 5], [0.0]), 1, 0)
    c = tagged(steps([2, 4, 6, 8, 9], [0.0] * 4), 2, 0)
    b2 = continue_episode(b, [7, 3, 2, 8], [0.0] * 4)
    c2 = continue_episode(c, [1, 1, 5, 4], [0.0] * 4)
    # The batch order is the runners' (finished episodes first), not time order.
    batch1 = [c.to_numpy(), b.to_numpy(), a.to_numpy()]
    batch2 = [b2.to_numpy(), c2.to_numpy()]
    piece = shaping_piece(
        potential_fn=phi_is_the_observation,
        gamma=gamma,
        normalization="discounted-sum-std",
        convention="bk",
    )
    run(batch1, piece)
    run(batch2, piece)
    bk = bk_shaped_rewards(
        [
            np.array([[1, 2], [2, 4], [3, 6], [6, 8]], float),
            np.array([[5, 9], [7, 1], [3, 1], [2, 5]], float),
        ],
        gamma,
    )
    slot0_batch1 = np.concatenate([batch1[2].get_rewards()[:-1], batch1[1].get_rewards()[:-1]])
    np.testing.assert_allclose(slot0_batch1, bk[0][:, 0], rtol=1e-4)
    np.testing.assert_allclose(batch1[0].get_rewards()[:-1], bk[0][:, 1], rtol=1e-4)
    np.testing.assert_allclose(batch2[0].get_rewards()[:-1], bk[1][:, 0], rtol=1e-4)
    np.testing.assert_allclose(batch2[1].get_rewards()[:-1], bk[1][:, 1], rtol=1e-4)


def test_chunks_are_put_in_time_order_per_env_slot():
    first = tagged(steps([1, 2], [0.0], terminated=True), 1, 3)
    second = tagged(steps([5, 6], [0.0]), 1, 3)
    other = tagged(steps([0, 0], [0.0]), 2, 3)
    untagged = steps([9, 9], [0.0])
    chunks = [EpisodeChunk(e, 1, e.id_) for e in (second, other, untagged, first)]
    slots = by_env_slot(chunks)
    assert slots[Stream("slot", "1/3")] == [3, 0] and slots[Stream("slot", "2/3")] == [1]
    assert slots[Stream("episode", untagged.id_)] == [2]
    assert [s.is_env_slot for s in slots] == [False, True, True]  # sorted: episode < slot


# ------------------------------------------------------------------------------ the scale
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
    assert PotentialScale("std", 0.9).update([("e", np.array([0.0, 2.0]))]) == pytest.approx(
        1.0, rel=1e-6
    )
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
