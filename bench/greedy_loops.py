"""Why greedy evaluation lags the stochastic policy on BabyAI: how many greedy episodes fail
because the agent comes back to a state and so repeats itself forever.

    python bench/greedy_loops.py RUN_FOLDER [RUN_FOLDER ...]   # bench/results/greedy_loops.md

Each RUN_FOLDER is a trial's Tune folder (holding ``checkpoint_*``); its last checkpoint's
RL module plays ``--episodes`` episodes of the trial's task env (fixed reset seeds), greedy
(argmax) and sampled. The env's whole state is the agent's cell, direction and what it
carries, and the grid (which a pick-up changes); a greedy policy is a function of the
observation, which is a function of that state, so once a state comes back within an episode
the greedy agent cycles until the time limit. Reported: success of both policies, and of the
failed greedy episodes the share that came back to a state (a loop) and the share in which the
target (an object the mission names) was never in the agent's view: a failure that never saw
the target is a failed search, one that saw it a failed approach.

``--name`` names the table and JSON (``bench/results/greedy_loops.{md,json}`` by default), so
that a check of other trials keeps the earlier table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]


def play(env, module, seed: int, greedy: bool, rng) -> dict:
    import numpy as np
    import torch
    from ray.rllib.core.columns import Columns

    obs, _ = env.reset(seed=seed)
    level, seen, looped, actions = env.unwrapped.level, set(), False, Counter()
    targets, saw_target, at_reset = level.instrs.desc.obj_set, False, None
    while True:
        # The whole state: the agent, what it carries and the grid (a pick-up changes it).
        state = (
            tuple(level.agent_pos),
            int(level.agent_dir),
            repr(level.carrying),
            level.grid.encode().tobytes(),
        )
        looped |= state in seen
        seen.add(state)
        # A carried target has cur_pos (-1, -1); it was seen to be picked up.
        saw_target = saw_target or any(
            obj.cur_pos is not None and obj.cur_pos[0] >= 0 and level.agent_sees(*obj.cur_pos)
            for obj in targets
        )
        at_reset = saw_target if at_reset is None else at_reset
        with torch.no_grad():
            logits = module.forward_inference({Columns.OBS: torch.as_tensor(obs[None])})[
                Columns.ACTION_DIST_INPUTS
            ][0].numpy()
        if greedy:
            action = int(np.argmax(logits))
        else:
            p = np.exp(logits - logits.max())
            action = int(rng.choice(len(p), p=p / p.sum()))
        actions[action] += 1
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return {
                "success": bool(info.get("success")),
                "looped": looped,
                "saw_target": saw_target,
                "target_in_view_at_reset": at_reset,
                "actions": dict(actions),
            }


def checkpoint_env_steps(run: Path, checkpoint: Path) -> int | None:
    """The env steps the trial had sampled at ``checkpoint``: its training iteration (in the
    checkpoint's state) looked up in the run folder's ``result.json``."""
    import pickle

    with open(checkpoint / "algorithm_state.pkl", "rb") as f:
        iteration = pickle.load(f).get("training_iteration")
    steps, results = None, run / "result.json"
    if iteration is not None and results.is_file():
        for line in results.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a running trial's partly written last line
                continue
            if row.get("training_iteration") == iteration:
                steps = row.get("num_env_steps_sampled_lifetime")
    return None if steps is None else int(steps)


def check_run(run: Path, episodes: int) -> dict:
    import numpy as np
    from ray.rllib.core.rl_module.rl_module import RLModule

    import env_registry
    from rl_bk.experiments.task_config import load_task

    checkpoint = sorted(run.glob("checkpoint_*"))[-1]
    module = RLModule.from_checkpoint(
        checkpoint / "learner_group" / "learner" / "rl_module" / "default_policy"
    )
    params = json.loads((run / "params.json").read_text())
    env_name = load_task(run.parents[1] / "task.yaml").env  # the run folder's resolved task
    env = env_registry.make_env(env_name, {})
    rng = np.random.default_rng(0)
    greedy = [play(env, module, 10_000 + i, True, rng) for i in range(episodes)]
    sampled = [play(env, module, 10_000 + i, False, rng) for i in range(episodes)]
    failed = [g for g in greedy if not g["success"]]
    return {
        "run": str(run),
        "checkpoint": checkpoint.name,
        "env_steps": checkpoint_env_steps(run, checkpoint),
        "variant": params["variant"],
        "seed": params["seed"],
        "env": env_name,
        "episodes": episodes,
        # The same reset seeds for both policies: the levels, and what is in view at reset.
        "target_in_view_at_reset": sum(g["target_in_view_at_reset"] for g in greedy),
        "greedy_success": sum(g["success"] for g in greedy) / episodes,
        "sampled_success": sum(s["success"] for s in sampled) / episodes,
        "greedy_failed": len(failed),
        "greedy_failed_looped": sum(g["looped"] for g in failed),
        "greedy_failed_never_saw_target": sum(not g["saw_target"] for g in failed),
        "sampled_failed": sum(not s["success"] for s in sampled),
        "sampled_failed_never_saw_target": sum(
            not s["saw_target"] and not s["success"] for s in sampled
        ),
    }


def table_lines(rows: list[dict], command: str, when: str = "") -> list[str]:
    """The markdown table of :func:`check_run`'s rows, under the command that made them
    (``when``: in what step of that command, if it does more than this check)."""
    from rl_bk.experiments.results import display_label

    episodes = sorted({r["episodes"] for r in rows})
    lines = [
        "# Greedy evaluation: failures from loops",
        "",
        f"`{command}`{when} ({time.strftime('%Y-%m-%d %H:%M')}). Each trial's last "
        f"checkpoint, {', '.join(map(str, episodes))} episodes per policy from reset seeds "
        '10000 on. A greedy episode "looped" when it came back to a state it had been '
        "in (the agent's cell, direction and load, and the grid): from there a greedy "
        "agent repeats itself "
        'until the time limit. "Never saw the target": no object the mission names was '
        "ever in the agent's view (a failed search, not a failed approach). "
        "Oracle-knowledge trials are marked as everywhere.",
        "",
        "| trial | checkpoint (env steps) | target in view at reset | greedy success "
        "| sampled success "
        "| failed greedy episodes | of which looped | of which never saw the target "
        "| failed sampled episodes | of which never saw the target |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        v = r["variant"]
        name = display_label(
            " ".join([v["method"], *(f"{k}={x}" for k, x in sorted(v["params"].items()))])
        )
        steps = "" if r["env_steps"] is None else f" ({r['env_steps']:,})"
        lines.append(
            f"| {name} seed={r['seed']} | {r['checkpoint']}{steps} | "
            f"{r['target_in_view_at_reset']} of {r['episodes']} | "
            f"{r['greedy_success']:.2f}"
            f" | {r['sampled_success']:.2f} | {r['greedy_failed']} | "
            f"{r['greedy_failed_looped']} | {r['greedy_failed_never_saw_target']} | "
            f"{r['sampled_failed']} | "
            f"{r['sampled_failed_never_saw_target']} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="trials' Tune folders")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--name", default="greedy_loops", help="file name, without .md/.json")
    args = p.parse_args(argv)

    rows = [check_run(run, args.episodes) for run in args.runs]
    command = " ".join(["python bench/greedy_loops.py", *(sys.argv[1:] if argv is None else argv)])
    lines = table_lines(rows, command)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(rows, indent=2))
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
