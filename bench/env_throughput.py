"""Env throughput: raw steps/s per env family with and without captions, and RLlib PPO's
env steps/s on BabyAI-Text, reported as ratios measured side by side in one run.

    python bench/env_throughput.py           # writes bench/results/env_throughput.{md,json}
    python bench/env_throughput.py --quick   # shorter, for a look

Raw: one process, uniformly random actions, resets included. Captioned and uncaptioned envs
are stepped in alternating rounds and the median round is reported, so that load from other
processes on this shared machine hits both alike. PPO: the task's own setup (1 env runner ×
8 envs, train batch 2048, 4 epochs, learning included), env steps over the wall time of the
timed iterations (the first, warm-up iteration excluded); the raw BabyAI number it is divided
by is measured in the same run, just before.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import env_registry  # noqa: E402

ENVS = {
    "babyai": "BabyAI-Text-GoToLocal-RedBall-S20-v0",
    "crafter": "Crafter-Text-v0",
    "nethack": "NetHack-Text-Score-v0",
}


def steps_per_second(env, steps: int, rng: np.random.Generator) -> float:
    n_actions = env.action_space.n
    actions = rng.integers(n_actions, size=steps)
    start = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def raw_throughput(name: str, steps: int, rounds: int) -> dict[str, float]:
    """Median steps/s with and without captions, stepped in alternating rounds."""
    envs = {cap: env_registry.make_env(name, {"caption": cap}) for cap in (True, False)}
    rng = np.random.default_rng(0)
    for env in envs.values():
        env.reset(seed=0)
        steps_per_second(env, min(steps, 500), rng)  # warm-up: JIT compiles, first resets
    samples: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for cap, env in envs.items():
            samples[cap].append(steps_per_second(env, steps, rng))
    for env in envs.values():
        env.close()
    with_caption, without = statistics.median(samples[True]), statistics.median(samples[False])
    return {
        "steps_per_s_captioned": with_caption,
        "steps_per_s_uncaptioned": without,
        # share of a captioned step's time spent captioning: 1 - t_without / t_with
        "caption_share_of_step_time": 1.0 - with_caption / without,
    }


def ppo_throughput(iterations: int) -> dict[str, float]:
    import ray

    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR")
    env_registry.register_all()
    task = load_task("babyai-gotolocal-redball-s20")
    algo = get_method("ppo").build(task, 0, {}).build_algo()
    try:
        first = algo.train()
        steps0, t0 = first["num_env_steps_sampled_lifetime"], time.perf_counter()
        for _ in range(iterations):
            result = algo.train()
        elapsed = time.perf_counter() - t0
        steps = result["num_env_steps_sampled_lifetime"] - steps0
    finally:
        algo.stop()
        ray.shutdown()
    return {"ppo_env_steps_per_s": steps / elapsed, "ppo_env_steps_timed": steps}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    steps, rounds, iters = (1000, 3, 3) if args.quick else (4000, 5, 10)

    results: dict[str, dict[str, float]] = {}
    for family, name in ENVS.items():
        try:
            results[family] = {"env": name, **raw_throughput(name, steps, rounds)}
        except env_registry.MissingDependencyError as err:
            print(f"skip {family}: {err}")
            continue
        r = results[family]
        print(f"{name:40s} raw {r['steps_per_s_uncaptioned']:8.0f} steps/s, captioned "
              f"{r['steps_per_s_captioned']:8.0f}: captions take "
              f"{100 * r['caption_share_of_step_time']:.1f}% of step time")  # fmt: skip

    babyai_raw = raw_throughput(ENVS["babyai"], steps, rounds)["steps_per_s_captioned"]
    ppo = ppo_throughput(iters)
    ratio = ppo["ppo_env_steps_per_s"] / babyai_raw
    results["ppo_babyai"] = {**ppo, "raw_captioned_steps_per_s_same_run": babyai_raw,
                             "ppo_over_raw": ratio}  # fmt: skip
    print(f"PPO on {ENVS['babyai']}: {ppo['ppo_env_steps_per_s']:.0f} env steps/s = "
          f"{ratio:.2f} x raw ({babyai_raw:.0f} steps/s, measured just before)")  # fmt: skip

    command = "python bench/env_throughput.py" + (" --quick" if args.quick else "")
    meta = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
            "load_average_at_end": os.getloadavg()}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "env_throughput.json").write_text(json.dumps({"meta": meta, **results}, indent=2))
    lines = [
        "# Env throughput", "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, "
        f"load average at end {meta['load_average_at_end'][0]:.1f}.", "",
        "| env | raw steps/s (no caption) | captioned steps/s | caption share of step time |",
        "|---|---|---|---|",
    ]  # fmt: skip
    for family in ENVS:
        if family in results:
            r = results[family]
            lines.append(f"| {r['env']} | {r['steps_per_s_uncaptioned']:.0f} | "
                         f"{r['steps_per_s_captioned']:.0f} | "
                         f"{100 * r['caption_share_of_step_time']:.1f}% |")  # fmt: skip
    r = results["ppo_babyai"]
    lines += ["", f"PPO (1 runner × 8 envs, batch 2048, 4 epochs, learning included) on "
              f"{ENVS['babyai']}: **{r['ppo_env_steps_per_s']:.0f} env steps/s = "
              f"{r['ppo_over_raw']:.2f} × raw** captioned single-process "
              f"({r['raw_captioned_steps_per_s_same_run']:.0f} steps/s, same run)."]  # fmt: skip
    (args.out / "env_throughput.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out / 'env_throughput.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
