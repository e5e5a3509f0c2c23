"""Checks behind the BK reference check's open gap (``bench/results/bk-reference-check.md``):
with the same oracle potential rl-bk learns less than BK's ``train_rs.py``, while with a zero
potential the two match. Each check rules one place out, and says so or fails:

- ``levels``: BK's registered ``BabyAI-Text-GoToLocal-RedBall-S20`` (its own minigrid fork,
  in its own environment) and rl-bk's task env make the same level from each seed: every
  object's type, colour and position, the agent's position and direction, the time limit.
- ``dynamics``: from the same seeds, the same random actions give the same reward, flags,
  view, position, direction and carried object at every step in both envs.
- ``gae``: in a live PPO learner (the task's config, one local env runner) the rewards GAE
  reads are the shaped ones: with Phi(s_t) = 100 t (t within the window-extended chunk)
  BK's convention pays gamma Phi(s_t) - Phi(s_{t-1}) = 100 - t inside an episode.
- ``gae-math``: RLlib's value targets (``compute_value_targets``, on the flags
  ``AddOneTsToEpisodesAndTruncate`` writes: terminated or truncated on the last real step, an
  unflagged artificial step after it) equal CleanRL's GAE, which BK's ``train_rs.py`` runs,
  on a terminated episode and on a chunk cut mid-episode (random rewards and values).
- ``captions``: in the same learner the shaping term reads, for every state of every chunk,
  the caption of the observation it came with (rl-bk's captioner on the view, the carried
  object read from the agent's cell as minigrid draws it).
- ``update``: one PPO update on the same batch (BK's 4th rollout, with its weights and Adam
  state) in BK's code and in rl-bk's learner, in BK's minibatch order: values, value
  targets, advantages, every minibatch's losses, the weights after (:mod:`bench.bk_same_update`).
- ``same-shaping``: BK's ``train_rs.py`` itself shapes its first 12 rollouts (its windows,
  reward provider, running sums, variance, carried potential); the same rollouts through
  rl-bk's shaping term give the same shaped reward at every step (:mod:`bench.bk_same_shaping`).
- ``live-shaping``: the shaped rewards of a live rl-bk run (the task's two env runners, the
  oracle potential, 45 iterations with the task's evaluation and a checkpoint every 2, as a
  trial runs) against BK's arithmetic replayed on the same states, with BK's own windows and
  per-slot running sums (:mod:`bench.bk_live_shaping`).

    python -m bench.bk_gap_checks                 # all eight, ~8 min
    python -m bench.bk_gap_checks --checks levels --seeds 400

BK's environment is the reference check's (``--setup-bk-env`` there). Results print and go
to ``bench/results/bk-gap-checks.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench.bk_reference_check import BK_ENV_ID, BK_SRC, TASK, bk_python, bk_run_env

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bk-gap-checks.json"
CHECKS = (
    "levels",
    "dynamics",
    "gae-math",
    "gae",
    "captions",
    "update",
    "live-shaping",
    "same-shaping",
)

#: One line per seed: the level as minigrid holds it after reset (both envs are minigrid
#: RoomGridLevels; ``level`` is the unwrapped one).
_LEVEL_LINES = r"""
def level_lines(level, seeds):
    out = []
    for s in range(seeds):
        level.reset(seed=s)
        objs = sorted((o.type, o.color, int(o.cur_pos[0]), int(o.cur_pos[1]))
                      for o in level.grid.grid if o is not None and o.type != "wall")
        out.append(repr((objs, tuple(int(v) for v in level.agent_pos), int(level.agent_dir),
                         int(level.max_steps))))
    return out
"""

_BK_LEVELS = r"""
import sys, json
import gymnasium as gym
import babyai_envs  # noqa: F401  (BK's registrations)
level = gym.make(sys.argv[1]).unwrapped
print(json.dumps(level_lines(level, int(sys.argv[2]))))
"""


def _in_both_envs(shared: str, bk_main: str, args: list, ours) -> tuple[list, list]:
    """The lines ``shared`` (code defining a function) makes in BK's env, run there by
    ``bk_main`` with ``args``, and in rl-bk's task env here, by ``ours(namespace, env)``."""
    run = subprocess.run(
        [str(bk_python()), "-c", shared + bk_main, BK_ENV_ID, *map(str, args)],
        cwd=BK_SRC,
        capture_output=True,
        text=True,
        env=bk_run_env(),
    )
    if run.returncode != 0:
        raise SystemExit(
            "BK's env did not run (set it up with `python -m "
            "bench.bk_reference_check --bk-repo PATH --setup-bk-env`):\n"
            + "\n".join(run.stderr.strip().splitlines()[-8:])
        )
    bk = json.loads(run.stdout.strip().splitlines()[-1])
    import env_registry
    from rl_bk.experiments.task_config import load_task

    task = load_task(TASK)
    env = env_registry.make_env(task.env, task.env_config)
    namespace: dict = {}
    exec(shared, namespace)
    try:
        return bk, ours(namespace, env)
    finally:
        env.close()


def check_levels(seeds: int) -> dict:
    bk, ours = _in_both_envs(
        _LEVEL_LINES,
        _BK_LEVELS,
        [seeds],
        lambda ns, env: ns["level_lines"](env.unwrapped.level, seeds),
    )
    same = sum(a == b for a, b in zip(bk, ours))
    return {
        "seeds": seeds,
        "same_levels": same,
        "ok": same == seeds,
        "first_differing_seed": next((i for i, (a, b) in enumerate(zip(bk, ours)) if a != b), None),
    }


#: One line per step of a fixed random action sequence from each seed's level: the step's
#: reward and flags, then the level as the agent sees it and where it stands.
_DYNAMICS_LINES = r"""
import numpy as np

def dynamics_lines(env, level, seeds, steps):
    out = []
    for s in range(seeds):
        env.reset(seed=s)
        actions = np.random.default_rng(1000 + s).integers(0, 7, size=steps)
        for a in actions:
            _, reward, terminated, truncated, _ = env.step(int(a))
            c = level.carrying
            out.append(repr((s, round(float(reward), 6), bool(terminated), bool(truncated),
                             level.gen_obs()["image"].astype(int).tolist(),
                             tuple(int(v) for v in level.agent_pos), int(level.agent_dir),
                             None if c is None else (c.type, c.color))))
            if terminated or truncated:
                break
    return out
"""

_BK_DYNAMICS = r"""
import sys, json
import gymnasium as gym
import babyai_envs  # noqa: F401  (BK's registrations)
env = gym.make(sys.argv[1])
print(json.dumps(dynamics_lines(env, env.unwrapped, int(sys.argv[2]), int(sys.argv[3]))))
"""


def check_dynamics(seeds: int, steps: int = 400) -> dict:
    """Both envs, the same seeds and the same random actions: every step's reward, flags,
    view, position, direction and carried object."""
    bk, ours = _in_both_envs(
        _DYNAMICS_LINES,
        _BK_DYNAMICS,
        [seeds, steps],
        lambda ns, env: ns["dynamics_lines"](env, env.unwrapped.level, seeds, steps),
    )
    same = sum(a == b for a, b in zip(bk, ours))
    first = next((i for i, (a, b) in enumerate(zip(bk, ours)) if a != b), None)
    return {
        "seeds": seeds,
        "steps": len(bk),
        "steps_ours": len(ours),
        "same_steps": same,
        "first_difference": None
        if first is None
        else {"bk": bk[first][:300], "rl-bk": ours[first][:300]},
        "ok": same == len(bk) == len(ours),
    }


class TimeIndex:
    """Phi(s_t) = 100 t, t the state's index in the (window-extended) chunk."""

    name, horizon = "time-index", 1

    def __init__(self, path: str = ""):
        pass

    def __call__(self, chunks):
        return [100.0 * np.arange(len(c.captions), dtype=np.float64) for c in chunks]

    def metrics(self) -> dict:
        return {}


def check_learner(iterations: int) -> dict:
    """``gae`` and ``captions`` in one live learner."""
    import ray
    from ray.rllib.connectors.learner import general_advantage_estimation as gae
    from ray.rllib.core.columns import Columns

    import env_registry
    from env_registry.babyai.captioner import (
        AGENT_X,
        AGENT_Y,
        IDX_TO_COLOR,
        IDX_TO_OBJECT,
        OBJECT_TO_IDX,
        caption_babyai,
    )
    from rl_bk.algorithms.bk_ppo import ShapedPPOConfig, potential_shaping, sources
    from rl_bk.experiments.ppo_config import base_ppo_config
    from rl_bk.experiments.task_config import load_task

    rewards_seen: list[np.ndarray] = []
    captions = {"states": 0, "mismatch": 0}
    original_gae = gae.GeneralAdvantageEstimation.__call__
    original_shaping = potential_shaping.PotentialShaping.__call__

    def gae_spy(self, *, rl_module, batch, episodes, **kw):
        for module_batch in batch.values():
            rewards_seen.append(np.asarray(module_batch[Columns.REWARDS], np.float64).copy())
        return original_gae(self, rl_module=rl_module, batch=batch, episodes=episodes, **kw)

    def shaping_spy(self, found, rl_module=None):
        for piece in found:
            if piece.steps == 0:
                continue
            chunk = piece.as_chunk()
            for obs, caption in zip(chunk.observations, chunk.captions):
                view = np.rint(obs[:147].reshape(7, 7, 3) * 10).astype(np.int64)
                # minigrid draws the carried object in the agent's own cell of the view
                obj, color, _ = (int(v) for v in view[AGENT_X][AGENT_Y])
                held = (
                    None
                    if obj in (OBJECT_TO_IDX["unseen"], OBJECT_TO_IDX["empty"])
                    else (IDX_TO_COLOR[color], IDX_TO_OBJECT[obj])
                )
                captions["states"] += 1
                captions["mismatch"] += caption_babyai(view, held) != caption
        return original_shaping(self, found, rl_module)

    gae.GeneralAdvantageEstimation.__call__ = gae_spy
    potential_shaping.PotentialShaping.__call__ = shaping_spy
    sources.LOADERS["time-index"] = f"{__name__}:TimeIndex"
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        env_registry.register_all()
        task = load_task(TASK)
        config = base_ppo_config(task, 0, {}, config=ShapedPPOConfig())
        config.env_runners(num_env_runners=0).evaluation(evaluation_interval=None)
        config.training(
            potential=sources.SourceSpec("time-index", "unused"),
            potential_normalization="none",
            extrinsic_coeff=10.0,
        )
        algo = config.build_algo()
        for _ in range(iterations):
            algo.train()
        algo.stop()
    finally:
        ray.shutdown()
        gae.GeneralAdvantageEstimation.__call__ = original_gae
        potential_shaping.PotentialShaping.__call__ = original_shaping
    rewards = np.concatenate(rewards_seen)
    # Inside an episode 100 - t (0 <= t < 132 in a 128-step chunk after 4 states of BK's
    # padding), plus 10 x the env reward; at an episode's start in a slot, -Phi of the slot's
    # previous state; PPO's artificial steps 0.
    inside = rewards[(rewards > -40) & (rewards <= 110)]
    return {
        "gae": {
            "rewards": int(rewards.size),
            "max": float(rewards.max()),
            "min": float(rewards.min()),
            "share_shaped": float(np.mean(np.abs(rewards) > 1e-9)),
            "ok": bool(rewards.max() >= 90 and rewards.min() < -100 and inside.size),
        },
        "captions": {**captions, "ok": captions["mismatch"] == 0},
    }


def check_gae_math(gamma: float = 0.99, lambda_: float = 0.95, seed: int = 0) -> dict:
    from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

    rng = np.random.default_rng(seed)
    # A: 5 steps, terminated; B: 4 steps, cut (bootstraps from V(s_4)). Each + 1 artificial
    # step (reward 0, unflagged), whose value is V of the state after the last step.
    r_a, v_a = rng.normal(size=5), rng.normal(size=6)
    r_b, v_b = rng.normal(size=4), rng.normal(size=5)
    values = np.concatenate([v_a, v_b])
    rewards = np.concatenate([r_a, [0.0], r_b, [0.0]])
    terminateds, truncateds = np.zeros(11), np.zeros(11)
    terminateds[4], truncateds[9] = 1.0, 1.0
    targets = compute_value_targets(
        values=values,
        rewards=rewards,
        terminateds=terminateds,
        truncateds=truncateds,
        gamma=gamma,
        lambda_=lambda_,
    )

    def cleanrl(r, v, next_value, done):  # train_rs.py's loop for one env, one rollout
        adv, last = np.zeros(len(r)), 0.0
        for t in reversed(range(len(r))):
            nonterminal = 0.0 if (t == len(r) - 1 and done) else 1.0
            nxt = next_value if t == len(r) - 1 else v[t + 1]
            last = r[t] + gamma * nxt * nonterminal - v[t] + gamma * lambda_ * nonterminal * last
            adv[t] = last
        return adv + v[: len(r)]

    reference = np.concatenate([cleanrl(r_a, v_a, 0.0, True), cleanrl(r_b, v_b, v_b[4], False)])
    ours = np.concatenate([targets[:5], targets[6:10]])
    gap = float(np.abs(ours - reference).max())
    return {"max_difference": gap, "ok": gap < 1e-5}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checks", default=",".join(CHECKS))
    p.add_argument("--seeds", type=int, default=400, help="levels compared (seeds 0..N-1)")
    p.add_argument("--iterations", type=int, default=4, help="PPO iterations of the learner")
    p.add_argument(
        "--live-iterations",
        type=int,
        default=45,
        help="iterations of the live-shaping check's run (1,024 env steps each)",
    )
    args = p.parse_args(argv)
    checks = {c.strip() for c in args.checks.split(",") if c.strip()}
    unknown = checks - set(CHECKS)
    if unknown:
        p.error(f"unknown checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    command = "python -m bench.bk_gap_checks " + " ".join(argv or sys.argv[1:])
    out: dict = {}
    if "levels" in checks:
        out["levels"] = check_levels(args.seeds)
    if "dynamics" in checks:
        out["dynamics"] = check_dynamics(min(args.seeds, 50))
    if "gae-math" in checks:
        out["gae-math"] = check_gae_math()
    if checks & {"gae", "captions"}:
        out.update({k: v for k, v in check_learner(args.iterations).items() if k in checks})
    if "update" in checks:
        from bench.bk_same_update import check_update

        out["update"] = check_update()
    if "live-shaping" in checks:
        from bench.bk_live_shaping import check_live_shaping

        # As a trial runs: the task's greedy evaluation on (twice in 45 iterations) and a
        # checkpoint every 2 iterations (the task file's), neither of which may touch it.
        out["live-shaping"] = check_live_shaping(
            args.live_iterations, evaluation=True, checkpoint_every=2
        )
    if "same-shaping" in checks:
        from bench.bk_same_shaping import check_same_shaping

        out["same-shaping"] = check_same_shaping()
    # Each check keeps its own command: a run of some checks leaves the others' results.
    kept = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    old_command = kept.pop("command", None)  # one command for all, before checks kept theirs
    kept = {
        k: v if "command" in v or old_command is None else {**v, "command": old_command}
        for k, v in kept.items()
    }
    kept.update({name: {**result, "command": command} for name, result in out.items()})
    RESULTS.write_text(json.dumps(kept, indent=2) + "\n")
    for name, result in out.items():
        print(f"{name}: {'ok' if result['ok'] else 'FAILED'} {result}")
    return 0 if all(r["ok"] for r in out.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
