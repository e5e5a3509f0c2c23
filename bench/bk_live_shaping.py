"""BK's shaping replayed on a live rl-bk run: the shaped rewards rl-bk's learner computed in
training, against BK's ``train_rs.py`` arithmetic (lines 130-175, mansicer/
background-knowledge-rl) run on the same states.

The task's ``bk-code`` learner, with the reference check's oracle potential, trains some
iterations in the task file's layout (two env runners of four envs; under ``bk_gap_checks`` 45,
with the task's greedy evaluation on and a checkpoint every 2 iterations, as a trial). A spy on
the shaping term records what it was given (each chunk's env slot, episode, captions and
actions) and what it returned. The replay knows nothing of rl-bk's windows, streams or carried
state: per env slot it lays the batch's steps end to end as BK's rollout buffer holds them,
builds each state's window as BK's rolling buffer does (reset to the episode's first state and
action at its start), computes the potential with the same ``compute_potential``, and applies
BK's normalisation (one discounted running sum per slot across episodes and batches, gym's
running variance over every value, the carried last potential) and BK's one-step-late potential
difference. Every shaped reward must agree, and the rewards GAE then reads must be BK's
``rewards * ext_coef + shaped_rewards`` (line 175) on every real step, and the learner's policy
must give the sampled actions the log-probabilities the env runners recorded (on-policy: their
weights are the learner's).

    python -m bench.bk_gap_checks --checks live-shaping
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from typing import Any

import numpy as np

from bench.bk_reference_check import (
    BK_WINDOW,
    TASK,
    load_function,
    output_for,
    potential_paths,
    records,
    rl_bk_task_file,
    write_potentials,
)


class GymRunningMeanStd:
    """gym's ``RunningMeanStd`` (BK's ``utils/normalizer.py`` imports it): prior count 1e-4,
    variance 1."""

    def __init__(self):
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, n = float(np.mean(x)), float(np.var(x)), x.size
        delta, total = batch_mean - self.mean, self.count + n
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
        self.mean, self.var, self.count = self.mean + delta * n / total, m2 / total, total


def bk_replay(batches: list[list[dict]], potential, gamma: float, horizon: int) -> list[dict]:
    """BK's shaped reward of every recorded step (see the module docstring): for each batch,
    ``{(slot, episode, t): F}``."""
    episode_steps: dict[str, list[tuple[str, int]]] = defaultdict(list)  # slot -> (caption, a)
    carried: dict[str, float] = defaultdict(float)
    running_sum: dict[str, float] = {}
    rms = GymRunningMeanStd()
    out = []
    for chunks in batches:
        per_slot: dict[str, list[tuple[Any, float]]] = defaultdict(list)
        for c in sorted(chunks, key=lambda c: (c["slot"], c["slot_episode"], c["t_started"])):
            for k in range(c["steps"]):
                if k == 0 and c["t_started"] == 0:
                    episode_steps[c["slot"]] = []
                history = episode_steps[c["slot"]]
                history.append((c["captions"][k], c["actions"][k]))
                i = len(history) - 1
                slots = [max(0, i - BK_WINDOW + 1 + j) for j in range(BK_WINDOW)]
                caps, acts = [h[0] for h in history], [h[1] for h in history]
                phi = float(potential(records(caps, acts, slots, horizon)))
                per_slot[c["slot"]].append(((c["slot"], c["episode_id"], c["t_started"] + k), phi))
        # lines 169-174: the carried row first, the running sums, the variance, the division
        rows = {s: np.array([carried[s]] + [p for _, p in steps]) for s, steps in per_slot.items()}
        sums = []
        for s, row in rows.items():
            f = running_sum.get(s)
            for value in row:
                f = value if f is None else gamma * f + value
                sums.append(f)
            running_sum[s] = f
        rms.update(np.asarray(sums))
        shaped = {}
        for s, row in rows.items():
            scaled = row / np.sqrt(rms.var)
            f_bk = gamma * scaled[1:] - scaled[:-1]
            shaped.update({key: float(f) for (key, _), f in zip(per_slot[s], f_bk)})
            carried[s] = float(scaled[-1])
        out.append(shaped)
    return out


def check_live_shaping(
    iterations: int = 12,
    seed: int = 0,
    tol: float = 1e-6,
    evaluation: bool = False,
    checkpoint_every: int | None = None,
) -> dict:
    """The check (module docstring); ``evaluation`` keeps the task's greedy evaluation on and
    ``checkpoint_every`` saves the algorithm every that many iterations, as a trial under
    ``tune_run.py`` does, to show neither touches the shaping's state."""
    import ray
    import torch
    from ray.rllib.connectors.learner import general_advantage_estimation as gae
    from ray.rllib.core.columns import Columns

    import env_registry
    from rl_bk.algorithms.bk_ppo import potential_shaping
    from rl_bk.callbacks.env_slot import ENV_SLOT, SLOT_EPISODE
    from rl_bk.experiments import knowledge_pipeline
    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task

    out = output_for(300_000, [seed])
    write_potentials(out)
    rl_file, _ = potential_paths(out, "oracle")
    task = load_task(str(rl_bk_task_file(out, "oracle", seed, 300_000)))
    horizon = load_task(TASK).knowledge.code.horizon
    recorded: list[list[dict]] = []
    pending: list[tuple[Any, int, np.ndarray]] = []  # (episode, steps, expected rewards)
    gae_gaps: list[float] = []
    logp_gaps: list[float] = []
    original = potential_shaping.PotentialShaping.__call__
    original_gae = gae.GeneralAdvantageEstimation.__call__

    def spy(self, found, rl_module=None):
        added = original(self, found, rl_module)
        batch = []
        for piece, bonus in zip(found, added):
            if piece.steps == 0:
                continue
            chunk, data = piece.as_chunk(), piece.episode.custom_data
            batch.append(
                {
                    "slot": data[ENV_SLOT],
                    "slot_episode": data[SLOT_EPISODE],
                    "episode_id": piece.episode_id,
                    "steps": piece.steps,
                    "t_started": int(piece.episode.t_started),
                    "captions": list(chunk.captions[: piece.steps]),
                    "actions": [int(a) for a in chunk.actions[: piece.steps]],
                    "shaped": np.asarray(bonus, np.float64).copy(),
                }
            )
            expected = extrinsic_coeff * np.asarray(piece.rewards, np.float64) + batch[-1]["shaped"]
            pending.append((piece.episode, piece.steps, expected))
        recorded.append(batch)
        return added

    def gae_spy(self, *, rl_module, batch, episodes, **kw):
        for episode, steps, expected in pending:
            read = np.asarray(episode.get_rewards(), np.float64)[:steps]
            gae_gaps.append(float(np.abs(read - expected).max()))
        pending.clear()
        # On-policy: the learner's policy gives the sampled actions the log-probabilities the
        # env runners recorded (their weights are the learner's, synced after each update).
        for module_id, module_batch in batch.items():
            module = rl_module[module_id]
            with torch.no_grad():
                logits = module.forward_train(module_batch)[Columns.ACTION_DIST_INPUTS]
            logp = torch.log_softmax(logits, -1).gather(
                1, module_batch[Columns.ACTIONS].long()[:, None]
            )[:, 0]
            real = module_batch[Columns.LOSS_MASK].bool()
            logp_gaps.append(float((logp - module_batch[Columns.ACTION_LOGP])[real].abs().max()))
        return original_gae(self, rl_module=rl_module, batch=batch, episodes=episodes, **kw)

    potential_shaping.PotentialShaping.__call__ = spy
    gae.GeneralAdvantageEstimation.__call__ = gae_spy
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        env_registry.register_all()
        knowledge_pipeline.collect_dataset(task)
        knowledge_pipeline.build_knowledge(task, "bk-code", "oracle")
        config = get_method("bk-code").build(task, seed, {"include_mission": False})
        extrinsic_coeff = float(config.extrinsic_coeff)
        if not evaluation:
            config.evaluation(evaluation_interval=None)
        algo = config.build_algo()
        evaluated = 0
        with tempfile.TemporaryDirectory() as saves:
            for i in range(1, iterations + 1):
                result = algo.train()
                evaluated += int(
                    "evaluation" in result
                    and bool(result["evaluation"].get("env_runners", {}).get("num_episodes"))
                )
                if checkpoint_every and i % checkpoint_every == 0:
                    algo.save_to_path(saves)
        gamma = float(algo.config.gamma)
        algo.stop()
    finally:
        ray.shutdown()
        potential_shaping.PotentialShaping.__call__ = original
        gae.GeneralAdvantageEstimation.__call__ = original_gae

    replay = bk_replay(
        recorded, load_function(rl_file.read_text(), "compute_potential"), gamma, horizon
    )
    gaps, steps, starts = [], 0, 0
    for batch, bk in zip(recorded, replay):
        for c in batch:
            ours = c["shaped"]
            theirs = np.array(
                [bk[(c["slot"], c["episode_id"], c["t_started"] + k)] for k in range(c["steps"])]
            )
            gaps.append(float(np.abs(ours - theirs).max()))
            steps += c["steps"]
            starts += c["t_started"] == 0
    slots = {c["slot"] for batch in recorded for c in batch}
    scale = max(float(np.abs(c["shaped"]).max()) for batch in recorded for c in batch)
    gap = max(gaps)
    return {
        "iterations": iterations,
        "evaluations": evaluated,
        "checkpoint_every": checkpoint_every,
        "batches": len(recorded),
        "steps": steps,
        "env_slots": len(slots),
        "episode_starts": int(starts),
        "largest_shaped_reward": scale,
        "max_difference": gap,
        "extrinsic_coeff": extrinsic_coeff,
        "gae_chunks_read": len(gae_gaps),
        "gae_rewards_max_difference": max(gae_gaps, default=float("nan")),
        "sampled_logp_max_difference": max(logp_gaps, default=float("nan")),
        "ok": bool(
            gap <= tol * max(1.0, scale)
            and len(slots) == 8
            and gae_gaps
            and max(gae_gaps) <= 1e-6
            and logp_gaps
            and max(logp_gaps) < 1e-4
        ),
    }
