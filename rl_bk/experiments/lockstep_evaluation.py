"""BK's greedy evaluation (50 argmax episodes every 20k env steps, ``utils/evaluate.py`` of
mansicer/background-knowledge-rl), fast and unbiased: N complete episodes, each from a fresh
seeded reset, run in lockstep on N envs with one batched forward pass per step, so none is
dropped and the policy sees all the envs still playing at once. Why not RLlib's own
evaluation: docs/methods.md#the-bk-pipeline.
"""

from __future__ import annotations

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_context import EnvContext
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
)
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from rl_bk.callbacks.episode_metrics import episode_end_metrics


def episode_seeds(trial_seed: int | None, evaluation: int, episodes: int) -> list[int]:
    """One reset seed per episode, fixed by the trial's seed and which evaluation this is
    (drawn from a seed sequence of its own, so unrelated to the training envs' seeds)."""
    # 7919: a fixed salt, so no other sequence seeded from the trial's seed starts the same.
    seq = np.random.SeedSequence([0 if trial_seed is None else int(trial_seed), 7919, evaluation])
    return [int(s) for s in seq.generate_state(episodes, dtype=np.uint32)]


def play_in_lockstep(envs, seeds: list[int], act) -> list[dict]:
    """Plays one episode on each env (``envs[i]`` reset with ``seeds[i]``), calling
    ``act(observations) -> actions`` once per step on the envs still playing; returns each
    episode's ``{"return", "length", "info"}`` (``info``: the last step's)."""
    obs = [env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)]
    out = [{"return": 0.0, "length": 0, "info": {}} for _ in envs]
    playing = list(range(len(envs)))
    while playing:
        actions = act(np.stack([obs[i] for i in playing]))
        still = []
        for i, action in zip(playing, actions):
            obs[i], reward, terminated, truncated, info = envs[i].step(action)
            out[i]["return"] += float(reward)
            out[i]["length"] += 1
            if terminated or truncated:
                out[i]["info"] = info
            else:
                still.append(i)
        playing = still
    return out


#: Prefix of the sampled policy's metrics when an evaluation also runs it (``sampled=True``).
SAMPLED_PREFIX = "sampled_"


class LockstepEvaluation:
    """``AlgorithmConfig.evaluation(custom_evaluation_function=LockstepEvaluation(n, greedy))``.

    ``sampled``: also play the same episodes (same reset seeds) with the sampled policy, and
    report them beside the greedy ones as ``sampled_<metric>``; its samples come from a torch
    generator state of their own, so training's random stream is not touched.

    RLlib has synced the learner's weights into the evaluation env runner before calling it;
    the forward pass is that runner's RLModule's ``forward_inference`` on the stacked
    observations (the default env-to-module connectors only batch and tensorise a flat
    observation, which this does directly), and the action is the mode of the module's
    inference distribution (greedy) or a sample from it. The results go to
    ``evaluation/env_runners/...`` as RLlib's would: return, length, episodes, env steps, and
    the task metrics of ``rl_bk.callbacks.episode_metrics``."""

    def __init__(self, episodes: int, greedy: bool = True, sampled: bool = False) -> None:
        self.episodes, self.greedy, self.sampled = int(episodes), bool(greedy), bool(sampled)

    def _policy(self, module, greedy: bool):

        if module.is_stateful():
            raise ValueError("lockstep evaluation needs a stateless RLModule (no LSTM state)")
        dist_cls = module.get_inference_action_dist_cls()

        def act(observations: np.ndarray) -> list:
            with torch.no_grad():
                out = module.forward_inference({Columns.OBS: torch.as_tensor(observations)})
                dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
                actions = (dist.to_deterministic() if greedy else dist).sample()
            return actions.cpu().numpy().tolist()

        return act

    def __call__(self, algorithm, eval_env_runner_group) -> tuple[dict, int, int]:

        runner = eval_env_runner_group.local_env_runner
        config = algorithm.config
        envs = [
            algorithm.env_creator(EnvContext(dict(config.env_config), worker_index=0))
            for _ in range(self.episodes)
        ]

        try:
            # The training iteration names the evaluation: a resumed trial replays the same seeds.
            seeds = episode_seeds(config.seed, algorithm.iteration, self.episodes)
            episodes = play_in_lockstep(envs, seeds, self._policy(runner.module, self.greedy))
            sampled = []
            if self.sampled:
                with torch.random.fork_rng():
                    torch.manual_seed(seeds[0])
                    sampled = play_in_lockstep(envs, seeds, self._policy(runner.module, False))
        finally:
            for env in envs:
                env.close()

        steps = sum(e["length"] for e in episodes + sampled)
        logger = MetricsLogger()
        for prefix, played in (("", episodes), (SAMPLED_PREFIX, sampled)):
            for e in played:
                logger.log_value(f"{prefix}episode_return_mean", e["return"], reduce="mean")
                logger.log_value(f"{prefix}episode_len_mean", float(e["length"]), reduce="mean")
                for key, value in episode_end_metrics(e["info"]).items():
                    logger.log_value(f"{prefix}{key}", value, reduce="mean")
        logger.log_value(NUM_EPISODES, len(episodes) + len(sampled), reduce="sum")
        logger.log_value(NUM_ENV_STEPS_SAMPLED, steps, reduce="sum")
        logger.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="sum", clear_on_reduce=False)
        algorithm.metrics.aggregate([logger.reduce()], key=(EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
        return {}, steps, steps
