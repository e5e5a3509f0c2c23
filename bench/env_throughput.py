"""Env throughput: raw steps/s per env family with and without captions, RLlib PPO's env
steps/s on BabyAI-Text in several layouts, and PPO against APPO in each family's task layout,
reported as ratios measured side by side in one run.

    python -m bench.env_throughput           # writes bench/results/env_throughput.{md,json}
    python -m bench.env_throughput --quick   # shorter, for a look
    python -m bench.env_throughput --appo-only [--families babyai,nethack]
                                             # PPO against APPO alone: rewrites that section

Raw: one process, uniformly random actions, resets included. Captioned and uncaptioned envs
run in 30 pairs of adjacent short rounds; steps/s are the median rounds (wall clock), and the
caption's share of step time is the median over pairs of the CPU-time difference, so that
load from other processes on this shared machine hits both alike. PPO, learning included,
without the task's greedy evaluation (training throughput): the task's own layout
(tune_configs/babyai-gotolocal-redball-s20.yaml: its env runners, envs, batch, network and
learner threads), the same with the learner on one torch thread, 1 runner x 32, x 16 and x 8
envs, gymnasium's async vector env (one process per env) at 2 x 16 and 1 x 16, and the learner
compiled with torch.compile; then the task's layout with its evaluation (50 greedy episodes
every 20k env steps, whose env steps are not counted). One after the other; env steps over
the wall time of the timed iterations (the first, warm-up iteration excluded), divided by the
raw BabyAI rate measured in the same run, with RLlib's own timers for sampling, the learner's
update and the weight sync, so that the split holds without a profiler's overhead.

PPO against APPO: each family's task (babyai-gotolocal-redball-s20, crafter-text,
nethack-score) as its file sets it, built by the ``ppo`` method with ``algorithm: ppo`` and
with ``algorithm: appo`` (an APPO iteration samples one train batch too), evaluation off. Two
rounds of each (one with --quick), PPO first in the first round and APPO first in the
second, each a fresh build timed as above; env steps/s pooled over the rounds, over the
family's raw captioned rate measured just before its rounds, and APPO's over PPO's. RLlib's
timers say where an iteration's time goes, APPO's learner thread (updating, or idle waiting
for a batch) and the env runners' share of their time spent sampling included. RLlib keeps
each timer as a moving average over all iterations (coefficient 0.01: after ten iterations
the warm-up one still weighs 90%), so this bench has RLlib sum each timer instead and
reports seconds per timed iteration.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

import env_registry

ROOT = Path(__file__).resolve().parents[1]

ENVS = {
    "babyai": "BabyAI-Text-GoToLocal-RedBall-S20-v0",
    "crafter": "Crafter-Text-v0",
    "nethack": "NetHack-Text-Score-v0",
}
#: Steps per timed round: about a third of a second each, whatever the env's speed.
ROUND_STEPS = {"babyai": 1000, "crafter": 300, "nethack": 3000}


def run_steps(env, steps: int, rng: np.random.Generator) -> tuple[float, float]:
    """Steps the env with random actions; returns (wall seconds, this process's CPU seconds)."""
    actions = rng.integers(env.action_space.n, size=steps)
    wall, cpu = time.perf_counter(), time.process_time()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    return time.perf_counter() - wall, time.process_time() - cpu


def raw_throughput(name: str, steps: int, pairs: int) -> dict[str, float]:
    """Steps/s with and without captions, and the captions' share of a step's time.

    The two envs run in adjacent short rounds, alternating which goes first. The share is the
    median over pairs of 1 - cpu_uncaptioned / cpu_captioned, in this process's CPU time, which
    other processes' load barely touches; steps/s are medians of wall-clock rounds.
    """
    envs = {cap: env_registry.make_env(name, {"caption": cap}) for cap in (True, False)}
    rng = np.random.default_rng(0)
    for env in envs.values():
        env.reset(seed=0)
        run_steps(env, min(steps, 500), rng)  # warm-up: JIT compiles, first resets
    wall: dict[bool, list[float]] = {True: [], False: []}
    shares = []
    for i in range(pairs):
        cpu = {}
        for cap in (True, False) if i % 2 == 0 else (False, True):
            wall_s, cpu[cap] = run_steps(envs[cap], steps, rng)
            wall[cap].append(steps / wall_s)
        shares.append(1.0 - cpu[False] / cpu[True])
    for env in envs.values():
        env.close()
    return {
        "steps_per_s_captioned": statistics.median(wall[True]),
        "steps_per_s_uncaptioned": statistics.median(wall[False]),
        "caption_share_of_step_time": statistics.median(shares),
    }


@dataclass(frozen=True)
class PPOSetup:
    """One PPO layout to time; ``None`` fields keep the task file's setting."""

    runners_x_envs: tuple[int, int] | None = None
    evaluate: bool = False  # the task's greedy evaluation on (its env steps are not counted)
    learner_threads: int | None = None
    vectorize_mode: str | None = None  # gymnasium's "sync" (RLlib's default) or "async"
    compile_learner: bool = False  # RLlib's torch_compile_learner (inductor, on the CPU)

    @property
    def task_setting(self) -> bool:
        return (self.runners_x_envs is None and self.learner_threads is None
                and self.vectorize_mode is None and not self.compile_learner)  # fmt: skip


#: RLlib's per-iteration timers (seconds, RLlib's moving average over iterations).
TIMERS = {"sampling": "env_runner_sampling_timer", "learner update": "learner_update_timer",
          "weight sync": "synch_weights"}  # fmt: skip


def ppo_throughput(iterations: int, setups: list[PPOSetup]) -> dict[str, dict]:
    """PPO env steps/s for each setup, and where an iteration's wall time goes."""
    import ray

    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task

    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
             logging_level="ERROR")
    env_registry.register_all()
    task = load_task("babyai-gotolocal-redball-s20")
    out = {}
    try:
        for setup in setups:
            learner = task.learner.model_copy(update={"threads": setup.learner_threads})
            config = get_method("ppo").build(task.model_copy(update={"learner": learner}), 0, {})
            if setup.runners_x_envs is not None:
                runners, envs = setup.runners_x_envs
                config.env_runners(num_env_runners=runners, num_envs_per_env_runner=envs)
            if setup.vectorize_mode is not None:
                config.env_runners(gym_env_vectorize_mode=setup.vectorize_mode)
            if setup.compile_learner:
                config.framework(torch_compile_learner=True)
            if not setup.evaluate:
                config.evaluation(evaluation_interval=None)
            algo = config.build_algo()
            try:
                first = algo.train()
                steps0, t0 = first["num_env_steps_sampled_lifetime"], time.perf_counter()
                for _ in range(iterations):
                    result = algo.train()
                elapsed = time.perf_counter() - t0
            finally:
                algo.stop()
            steps = result["num_env_steps_sampled_lifetime"] - steps0
            timers = {name: float(result["timers"].get(key, float("nan")))
                      for name, key in TIMERS.items()}  # fmt: skip
            label = (f"{config.num_env_runners} runner(s) x {config.num_envs_per_env_runner} envs, "
                      f"batch {config.train_batch_size_per_learner}, {config.num_epochs} epochs, "
                      f"MLP {task.model.fcnet_hiddens}"
                      + (f", {setup.vectorize_mode} vector env" if setup.vectorize_mode else "")
                      + (f", learner on {setup.learner_threads} thread(s)"
                         if setup.learner_threads else "")
                      + (", learner compiled (torch.compile)" if setup.compile_learner else "")
                      + (", with the task's greedy evaluation" if setup.evaluate
                         else ""))  # fmt: skip
            out[label] = {"env_steps_per_s": steps / elapsed, "env_steps_timed": steps,
                          "iteration_s": elapsed / iterations, "timers_s": timers,
                          "task_setting": setup.task_setting,
                          "evaluation": setup.evaluate}  # fmt: skip
    finally:
        ray.shutdown()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    scale, pairs, iters = (0.5, 6, 3) if args.quick else (1.0, 30, 10)

    results: dict[str, dict[str, float]] = {}
    for family, name in ENVS.items():
        try:
            steps = int(ROUND_STEPS[family] * scale)
            results[family] = {"env": name, **raw_throughput(name, steps, pairs)}
        except env_registry.MissingDependencyError as err:
            print(f"skip {family}: {err}")
            continue
        r = results[family]
        print(f"{name:40s} raw {r['steps_per_s_uncaptioned']:8.0f} steps/s, captioned "
              f"{r['steps_per_s_captioned']:8.0f}: captions take "
              f"{100 * r['caption_share_of_step_time']:.1f}% of step time")  # fmt: skip

    steps = int(ROUND_STEPS["babyai"] * scale)
    babyai_raw = raw_throughput(ENVS["babyai"], steps, pairs)["steps_per_s_captioned"]
    # Training throughput without evaluation (the target's measure), then the task's layout
    # with its greedy evaluation (50 episodes every 20k env steps: env steps too, not counted).
    ppo = ppo_throughput(iters, [
        PPOSetup(),
        PPOSetup(learner_threads=2),
        PPOSetup(runners_x_envs=(1, 32)),
        PPOSetup(runners_x_envs=(1, 16)),
        PPOSetup(runners_x_envs=(1, 8)),
        PPOSetup(vectorize_mode="async"),
        PPOSetup(runners_x_envs=(1, 16), vectorize_mode="async"),
        PPOSetup(compile_learner=True),
        PPOSetup(evaluate=True),
    ])  # fmt: skip
    for r in ppo.values():
        r["over_raw"] = r["env_steps_per_s"] / babyai_raw
    results["ppo_babyai"] = {"raw_captioned_steps_per_s_same_run": babyai_raw, "runs": ppo}
    for layout, r in ppo.items():
        mark = " (the task's setting)" if r["task_setting"] else ""
        print(f"PPO on {ENVS['babyai']}, {layout}{mark}: {r['env_steps_per_s']:.0f} env steps/s "
              f"= {r['over_raw']:.2f} x raw ({babyai_raw:.0f} steps/s, same run)")  # fmt: skip

    command = "python -m bench.env_throughput" + (" --quick" if args.quick else "")
    meta = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
            "load_average_at_end": os.getloadavg()}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "env_throughput.json").write_text(json.dumps({"meta": meta, **results}, indent=2))
    lines = [
        "# Env throughput", "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, "
        f"load average at end {meta['load_average_at_end'][0]:.1f}.", "",
        "| env | raw steps/s (no caption) | captioned steps/s | caption share of step time "
        "(CPU time, median of 30 pairs) |",
        "|---|---|---|---|",
    ]  # fmt: skip
    for family in ENVS:
        if family in results:
            r = results[family]
            lines.append(f"| {r['env']} | {r['steps_per_s_uncaptioned']:.0f} | "
                         f"{r['steps_per_s_captioned']:.0f} | "
                         f"{100 * r['caption_share_of_step_time']:.1f}% |")  # fmt: skip
    lines += ["", f"PPO on {ENVS['babyai']} (learning included), over the raw captioned "
              f"single-process rate measured in the same run "
              f"({babyai_raw:.0f} steps/s):", "",
              "| setup | PPO env steps/s | PPO / raw | s per iteration | sampling | "
              "learner update | weight sync |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for layout, r in ppo.items():
        mark = " **(task setting)**" if r["task_setting"] else ""
        t = r["timers_s"]
        lines.append(f"| {layout}{mark} | {r['env_steps_per_s']:.0f} | {r['over_raw']:.2f} | "
                     f"{r['iteration_s']:.3f} | {t['sampling']:.3f} | "
                     f"{t['learner update']:.3f} | {t['weight sync']:.3f} |")  # fmt: skip
    lines += ["", "s per iteration: wall time of one timed iteration (one train batch); "
              "sampling, learner update, weight sync: RLlib's own timers for those parts of an "
              "iteration (its moving averages, seconds), with no profiler attached; the rest of "
              "an iteration is RLlib's bookkeeping and, where on, the greedy evaluation."]
    from bench.study import write_keeping_reading

    write_keeping_reading(args.out / "env_throughput.md", "\n".join(lines) + "\n")
    print(f"wrote {args.out / 'env_throughput.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
