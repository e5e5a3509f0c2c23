"""CleanRL's single-file PPO (``cleanrl/ppo.py``, unchanged but for its hidden width when asked)
on rl-bk's BabyAI-Text env, for bench/peer_throughput.py.

    python -m bench.peers.cleanrl_babyai PPO_PY OUT_JSON --hidden 64 -- [ppo.py flags]

Runs in an environment that has rl-bk's (for the env) plus ``tyro`` and ``tensorboard``, which
ppo.py imports. The env is registered under ppo.py's ``--env-id`` with a wrapper that keeps
the CPU seconds spent inside ``step``/``reset``; env 0's wrapper also notes the CPU clock at
each of its steps, so the time between an iteration's last step and the next one's first
(ppo.py's update) is told apart from the rollout's (env plus the policy's forward pass).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import ClassVar

import gymnasium as gym

import env_registry


class CpuInEnv(gym.Wrapper):
    """Counts this env's real steps and the process CPU seconds spent in its step and reset.
    Env 0's wrapper also stamps (wall, CPU, steps, env CPU) at each vector step: gymnasium's
    vector env resets a finished env in place of its next step, so a reset after the first
    step is a vector step too."""

    steps: ClassVar[int] = 0
    env_cpu_s: ClassVar[float] = 0.0
    stamps: ClassVar[list[tuple[float, float, int, float]]] = []

    def __init__(self, env, first: bool):
        super().__init__(env)
        self.first = first
        self.started = False

    def _stamp(self) -> None:
        c = CpuInEnv
        c.stamps.append((time.perf_counter(), time.process_time(), c.steps, c.env_cpu_s))

    def step(self, action):
        if self.first:
            self.started = True
            self._stamp()
        t = time.process_time()
        out = self.env.step(action)
        CpuInEnv.env_cpu_s += time.process_time() - t
        CpuInEnv.steps += 1
        return out

    def reset(self, **kwargs):
        if self.first and self.started:
            self._stamp()
        t = time.process_time()
        out = self.env.reset(**kwargs)
        CpuInEnv.env_cpu_s += time.process_time() - t
        return out


def main() -> int:
    ppo_py, out = Path(sys.argv[1]), Path(sys.argv[2])
    rest = sys.argv[3:]
    hidden = int(rest[rest.index("--hidden") + 1]) if "--hidden" in rest else 64
    ppo_argv = rest[rest.index("--") + 1 :]
    env_id = ppo_argv[ppo_argv.index("--env-id") + 1]
    num_steps = int(ppo_argv[ppo_argv.index("--num-steps") + 1])

    made = []

    def make(**_):
        env = CpuInEnv(env_registry.make_env(env_id), first=not made)
        made.append(env)
        return env

    gym.register(id=f"Peer-{env_id}", entry_point=make, disable_env_checker=True)
    ppo_argv[ppo_argv.index("--env-id") + 1] = f"Peer-{env_id}"
    source = ppo_py.read_text()
    if hidden != 64:  # the only edit: the MLP's width, so both trainers run the same network
        source = re.sub(r"\b64\b", str(hidden), source)
    sys.argv = [str(ppo_py), *ppo_argv]
    lines: list[str] = []
    real_print = print

    def print_and_keep(*args, **kwargs):  # ppo.py prints "SPS: n" once per iteration
        lines.append(" ".join(map(str, args)))
        real_print(*args, **kwargs)

    exec(
        compile(source, str(ppo_py), "exec"),
        {"__name__": "__main__", "__file__": str(ppo_py), "print": print_and_keep},
    )
    # Iteration k spans vector steps [k n, (k + 1) n); the first iteration (start-up) is not
    # timed, as rl-bk's bench leaves out its first; the gap before each timed iteration's
    # first step is ppo.py's update.
    stamps, n = CpuInEnv.stamps, num_steps
    first, last = stamps[n], stamps[(len(stamps) // n - 1) * n]
    update_cpu = sum(stamps[k * n][1] - stamps[k * n - 1][1] for k in range(2, len(stamps) // n))
    window_cpu = last[1] - first[1]
    env_cpu = last[3] - first[3]
    out.write_text(
        json.dumps(
            {
                "env_steps_timed": last[2] - first[2],
                "wall_s": last[0] - first[0],
                "env_steps_per_s": (last[2] - first[2]) / (last[0] - first[0]),
                "cpu_s": {
                    "env": env_cpu,
                    "update": update_cpu,
                    "rollout besides the env (policy forward, vector env, ppo.py's loop)": (
                        window_cpu - env_cpu - update_cpu
                    ),
                },
                "hidden": hidden,
                "sps_lines": [s for s in lines if s.startswith("SPS")][-3:],
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
