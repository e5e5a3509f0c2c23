"""BK's shaped rewards as BK's own code computes them, against rl-bk's shaping term on the same
rollouts.

The live-shaping check (:mod:`bench.bk_live_shaping`) replays BK's lines 130-175 as rl-bk
transcribed them, and the reference check's port check builds BK's windows by the same
transcription. This one transcribes nothing of BK: BK's ``train_rs.py`` (mansicer/
background-knowledge-rl, unmodified) runs its first rollouts on RedBall-S20 with the oracle
potential the reference check exports, under a driver that saves, at each update, what its
own rolling windows, its reward provider, its running sums, its variance and its carried
potential made of them: ``computed_rewards`` (Phi of every step's window) and
``shaped_rewards`` (BK's F), with the rollout's observations, actions and done flags. The same
rollouts then go, one train batch each, through rl-bk's learner piece for it (PPO's
artificial-step piece, then ``RewriteRewards`` with the task's ``PotentialShaping``: the
``bk`` convention, BK's normalisation, the oracle potential in rl-bk's code sandbox), as
RLlib episode chunks tagged with their env slot, continuing episodes cut where BK's rollout
ends. Every step's shaping term must equal BK's ``shaped_rewards``.

    python -m bench.bk_gap_checks --checks same-shaping
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from bench.bk_same_update import _HOOKS, DRIVER_HEAD, DRIVER_TAIL, run_hooked_train_rs

#: The 'batch' hook (after the rollout, its shaping and GAE; before the update) and the
#: 'updated' one.
_SHAPING_HOOKS = [_HOOKS[0], _HOOKS[2]]

_DRIVER = (
    DRIVER_HEAD
    + r"""
rollouts = []

def hook(kind, frame):
    if kind == "batch":
        rollouts.append({k: frame[k].detach().cpu().numpy().copy() if torch.is_tensor(frame[k])
                         else np.asarray(frame[k]).copy()
                         for k in ("obs", "actions", "dones", "next_obs", "next_done",
                                   "computed_rewards", "shaped_rewards")})
    elif frame["update"] == update:
        with open(out_path, "wb") as f:
            pickle.dump(rollouts, f)
        raise SystemExit(0)

"""
    + DRIVER_TAIL
)


def bk_rollouts(seed: int, updates: int) -> list[dict[str, np.ndarray]]:
    """BK's first ``updates`` rollouts (128 steps x 8 envs each) and its shaping of them."""
    with tempfile.TemporaryDirectory() as tmp:
        return run_hooked_train_rs(_DRIVER, _SHAPING_HOOKS, updates, seed, Path(tmp))


class RolloutEpisodes:
    """BK's rollouts as the episode chunks RLlib's env runners would send: one SingleAgentEpisode
    per env and episode piece, tagged with its env slot when the episode starts, an episode
    that runs past a rollout's end continued in the next (RLlib's ``cut``: same id). Each
    observation carries rl-bk's caption of BK's view in its info, as rl-bk's env writes it."""

    def __init__(self, caption):
        self.caption = caption
        self.open: dict[int, Any] = {}  # env -> the next chunk of its running episode

    def batch(self, rollout: dict[str, np.ndarray]) -> tuple[list, list[list[tuple[int, int]]]]:
        """The rollout's chunks (in env order), and for each its steps' (step, env) in BK's
        buffer."""
        from ray.rllib.env.single_agent_episode import SingleAgentEpisode

        from rl_bk.callbacks.env_slot import tag_env_slot

        obs, actions, dones = rollout["obs"], rollout["actions"], rollout["dones"]
        steps, envs = actions.shape
        chunks, where = [], []
        for e in range(envs):
            t = 0
            while t < steps:
                new = e not in self.open or bool(dones[t, e])
                if new:
                    episode = SingleAgentEpisode(
                        observations=[obs[t, e]],
                        infos=[{"caption": self.caption(obs[t, e])}],
                        len_lookback_buffer=0,
                    )
                    tag_env_slot(
                        episode=episode, env_runner=SimpleNamespace(worker_index=1), env_index=e
                    )
                else:
                    episode = self.open.pop(e)  # the running episode's next chunk
                end = next((u for u in range(t + 1, steps) if dones[u, e]), steps)
                for u in range(t, end):
                    # The state after the step: the next row's, or BK's next_obs at the
                    # rollout's end; after a terminal step BK keeps none (never read).
                    after = obs[u + 1, e] if u + 1 < steps else rollout["next_obs"][e]
                    ends = (u + 1 < steps and bool(dones[u + 1, e])) or (
                        u + 1 == steps and bool(rollout["next_done"][e])
                    )
                    episode.add_env_step(
                        after,
                        int(actions[u, e]),
                        0.0,
                        infos={"caption": self.caption(after)},
                        terminated=ends,
                    )
                chunks.append(episode)
                where.append([(u, e) for u in range(t, end)])
                if end == steps and not episode.is_terminated:
                    # cut now: PPO's first learner piece marks the batch's chunks truncated
                    self.open[e] = episode.cut()
                t = end
        return [c.to_numpy() for c in chunks], where


def check_same_shaping(seed: int = 0, updates: int = 12, tol: float = 1e-6) -> dict:
    from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from bench.bk_reference_check import (
        TASK,
        bk_format_code,
        load_function,
        output_for,
        potential_paths,
        write_potentials,
    )
    from rl_bk.algorithms.bk_ppo.code.potential import CodePotential
    from rl_bk.algorithms.bk_ppo.potential_shaping import PotentialShaping
    from rl_bk.connectors.learner.reward_rewrite import RewriteRewards
    from rl_bk.experiments.task_config import load_task

    task = load_task(TASK)
    out = output_for(300_000, [seed])
    write_potentials(out)
    rl_file, _ = potential_paths(out, "oracle")
    code, horizon = rl_file.read_text(), task.knowledge.code.horizon
    rollouts = bk_rollouts(seed, updates)
    # rl-bk's captioner on BK's (3, 7, 7) view, the carried object read from the agent's cell
    # (the reference check's port, which holds rl-bk's captioner; the captions check shows it
    # writes what rl-bk's env writes).
    caption = load_function(bk_format_code(code, horizon), "port_caption")
    shaping = PotentialShaping(
        potential_fn=CodePotential(code, family="babyai", horizon=horizon),
        gamma=task.ppo.gamma,
        coeff=task.knowledge.shaping_coeff,
        normalization=task.knowledge.potential_normalization,
        convention=task.knowledge.shaping_convention,
        episode_start=task.knowledge.episode_start_window,
    )
    piece = RewriteRewards(terms=[shaping], extrinsic_coeff=1.0)
    episodes = RolloutEpisodes(caption)
    gaps, scale, steps, starts = [], 0.0, 0, 0
    for rollout in rollouts:
        chunks, where = episodes.batch(rollout)
        shared = {}
        AddOneTsToEpisodesAndTruncate()(
            rl_module=None, batch={}, episodes=chunks, shared_data=shared
        )
        piece(
            rl_module=None, batch={}, episodes=chunks, shared_data=shared, metrics=MetricsLogger()
        )
        for chunk, cells in zip(chunks, where):
            ours = np.asarray(chunk.get_rewards(), np.float64)[: len(cells)]
            theirs = np.array([rollout["shaped_rewards"][u, e] for u, e in cells], np.float64)
            gaps.append(float(np.abs(ours - theirs).max()))
            scale = max(scale, float(np.abs(theirs).max()))
            steps += len(cells)
            starts += int(chunk.t_started == 0)
    gap = max(gaps)
    return {
        "seed": seed,
        "rollouts": len(rollouts),
        "steps": steps,
        "episode_starts": starts,
        "gamma": task.ppo.gamma,
        "largest_shaped_reward": scale,
        "max_difference": gap,
        "ok": bool(steps == updates * 1024 and gap <= tol * max(1.0, scale)),
    }
