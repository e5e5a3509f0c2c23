"""Where the BK reference check's greedy curves part: each implementation's trained policy,
played greedy (argmax) and sampled on the same fresh levels, with how its greedy failures end.

    python -m bench.bk_greedy_diagnosis   # writes bench/results/bk-greedy-diagnosis.{md,json}
    python -m bench.bk_greedy_diagnosis --episodes 50

It reads the runs ``bench/bk_reference_check.py`` left under ``bench/runs/bk-reference-check/``:
for BK's ``train_rs.py`` the agent it saved at the end (``models/agent.pt``), played in BK's own
environment (its venv, its env registry, its ``select_action``); for rl-bk the RL module of the
trial's last checkpoint (every 25 updates: a few thousand env steps before the end), played in
rl-bk's env. Each policy plays ``--episodes`` episodes from reset seeds 10000 on, greedy and
sampled. A greedy episode that fails "looped" when it came back to a state it had been in (the
agent's cell, direction and load, and the grid): from there an argmax policy that sees only
its view repeats itself until the time limit. The actions of the failed greedy episodes show
how it loops (BabyAI: 0 left, 1 right, 2 forward, 3 pick up, 4 drop, 5 toggle, 6 done).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench.bk_reference_check import BK_ENV_ID, BK_SRC, RUNS_ROOT, bk_python, bk_run_env

ROOT = Path(__file__).resolve().parents[1]
RUNS = RUNS_ROOT / "bk-reference-check"
ENV = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
FIRST_SEED = 10_000
ACTION_NAMES = ["left", "right", "forward", "pick up", "drop", "toggle", "done"]

#: Played with BK's python from BK's source folder: its agent, its env, its argmax.
_BK_PLAYER = r"""
import json, sys
from collections import Counter
import numpy as np, torch
from models.networks import IntrinsicAgent
from utils.env_maker import make_minigrid_env

path, env_id, out = sys.argv[1], sys.argv[2], sys.argv[5]
first, n = int(sys.argv[3]), int(sys.argv[4])
env = make_minigrid_env(env_id, image_only=True)()
agent = IntrinsicAgent(env.observation_space.shape, env.action_space.n)
agent.load_state_dict(torch.load(path, map_location="cpu"))
agent.eval()
torch.manual_seed(0)
episodes = {}
for mode in ("greedy", "sampled"):
    episodes[mode] = []
    for i in range(n):
        obs, _ = env.reset(seed=first + i)
        level, seen, looped, actions, won = env.unwrapped, set(), False, [], False
        while True:
            state = (tuple(level.agent_pos), int(level.agent_dir), repr(level.carrying),
                     level.grid.encode().tobytes())
            looped |= state in seen
            seen.add(state)
            x = torch.Tensor(obs).unsqueeze(0)
            with torch.no_grad():
                a = (agent.select_action(x) if mode == "greedy"
                     else agent.get_action_and_value(x)[0])
            a = int(a[0])
            actions.append(a)
            obs, reward, terminated, truncated, _ = env.step(a)
            if terminated or truncated:
                won = reward > 0
                break
        episodes[mode].append({"success": bool(won), "looped": looped,
                               "actions": dict(Counter(actions))})
json.dump(episodes, open(out, "w"))
"""


def play_rl_bk(checkpoint: Path, episodes: int) -> dict[str, list[dict]]:
    import numpy as np
    from ray.rllib.core.rl_module.rl_module import RLModule

    import env_registry
    from bench.greedy_loops import play

    module = RLModule.from_checkpoint(
        checkpoint / "learner_group" / "learner" / "rl_module" / "default_policy"
    )
    env = env_registry.make_env(ENV, {})
    rng = np.random.default_rng(0)
    return {
        mode: [play(env, module, FIRST_SEED + i, mode == "greedy", rng) for i in range(episodes)]
        for mode in ("greedy", "sampled")
    }


def play_bk(agent: Path, episodes: int, scratch: Path) -> dict[str, list[dict]]:
    result = scratch / f"bk-{agent.parent.parent.name}.json"
    done = subprocess.run(
        [
            str(bk_python()),
            "-c",
            _BK_PLAYER,
            str(agent.resolve()),
            BK_ENV_ID,
            str(FIRST_SEED),
            str(episodes),
            str(result),
        ],
        cwd=BK_SRC,
        env=bk_run_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"BK's player failed for {agent}:\n{done.stderr[-2000:]}")
    return json.loads(result.read_text())


def summary(played: dict[str, list[dict]]) -> dict:
    greedy, sampled = played["greedy"], played["sampled"]
    failed = [e for e in greedy if not e["success"]]
    actions: Counter = Counter()
    for e in failed:
        actions.update({int(k): v for k, v in e["actions"].items()})
    total = sum(actions.values()) or 1
    return {
        "greedy_success": sum(e["success"] for e in greedy) / len(greedy),
        "sampled_success": sum(e["success"] for e in sampled) / len(sampled),
        "greedy_failed": len(failed),
        "greedy_failed_looped": sum(e["looped"] for e in failed),
        "failed_action_shares": {
            ACTION_NAMES[a]: round(n / total, 3) for a, n in sorted(actions.items())
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    scratch = RUNS / "greedy-diagnosis"
    scratch.mkdir(parents=True, exist_ok=True)
    rows = []
    for potential in ("zero", "oracle"):
        for seed in (0, 1, 2):
            agents = sorted(
                (RUNS / "bk" / potential / str(seed)).glob("logs/rl/*/*/models/agent.pt")
            )
            checkpoints = sorted(
                (RUNS / "rl-bk" / potential / str(seed)).glob("*/*/tune/*/checkpoint_*")
            )
            if not agents or not checkpoints:
                continue
            for impl, played in (
                ("BK's train_rs.py", play_bk(agents[-1], args.episodes, scratch)),
                ("rl-bk", play_rl_bk(checkpoints[-1], args.episodes)),
            ):
                row = {
                    "potential": potential,
                    "seed": seed,
                    "implementation": impl,
                    "policy": "agent.pt (end)" if impl != "rl-bk" else checkpoints[-1].name,
                    **summary(played),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    command = "python -m bench.bk_greedy_diagnosis" + (
        f" --episodes {args.episodes}" if args.episodes != 100 else ""
    )
    lines = [
        "# BK reference check: greedy against sampled, per trained policy",
        "",
        f"`{command}` ({time.strftime('%Y-%m-%d %H:%M')}; {args.episodes} episodes per "
        f"policy and mode from reset seeds {FIRST_SEED} on; how: the module docstring of "
        "`bench/bk_greedy_diagnosis.py`).",
        "",
        "| potential | seed | implementation | policy | greedy success | sampled success | "
        "failed greedy | of which looped | actions in failed greedy episodes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in r["failed_action_shares"].items())
        lines.append(
            f"| {r['potential']} | {r['seed']} | {r['implementation']} | {r['policy']} "
            f"| {r['greedy_success']:.2f} | {r['sampled_success']:.2f} | "
            f"{r['greedy_failed']} | {r['greedy_failed_looped']} | {shares} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bk-greedy-diagnosis.json").write_text(
        json.dumps({"command": command, "episodes": args.episodes, "rows": rows}, indent=2)
    )
    from bench.study import write_keeping_reading

    write_keeping_reading(args.out / "bk-greedy-diagnosis.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
