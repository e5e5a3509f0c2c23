"""GLAM's env steps/s for inference and for training, beside symbolic PPO's, in one run.

    python -m bench.glam_throughput                       # SmolLM2 + LoRA (the task's GLAM)
    python -m bench.glam_throughput --rounds 3 --batch 32

Each configuration trains ``--batch`` env steps per iteration with the task's env runners
(one process: the LLM sits once in it), in turn, round after round (bench/paired_rounds.py:
load from other processes hits them alike). Per iteration, RLlib's own timers split the wall
time into sampling (the policy's forward passes and the env: *inference* env steps/s) and
the learner update (GAE's value pass, then PPO's epochs of forward and backward passes:
*training* env steps/s = batch / update seconds, for the task's number of epochs). Writes
``bench/results/glam_throughput.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="babyai-gotoredball-glam")
    p.add_argument("--batch", type=int, default=32, help="env steps per iteration")
    p.add_argument("--epochs", type=int, default=1, help="PPO epochs per iteration")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument(
        "--variants",
        default="ppo,glam-lora,glam-full",
        help="comma-separated: ppo, glam-lora, glam-full",
    )
    p.add_argument("--model", help="GLAM's model (default: the task's): tiny, smollm2, a folder")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args()

    import ray
    from ray.rllib.utils.metrics import ENV_RUNNER_SAMPLING_TIMER, LEARNER_UPDATE_TIMER, TIMERS

    import env_registry
    from bench.paired_rounds import run_facts
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    task = load_task(args.task)
    sizes = {
        "train_batch_size_per_learner": args.batch,
        "num_epochs": args.epochs,
        "minibatch_size": min(16, args.batch),
    }
    task = task.model_copy(
        update={
            "ppo": task.ppo.model_copy(update=sizes),
            "glam": task.glam.model_copy(
                update={"ppo": {**task.glam.ppo, **sizes}, "model": args.model or task.glam.model}
            ),
        }
    )
    builds = {
        "ppo": lambda: get_method("ppo").build(task, 0, {}),
        "glam-lora": lambda: get_method("glam").build(task, 0, {}),
        "glam-full": lambda: get_method("glam").build(task, 0, {"lora_r": None}),
    }
    names = [v for v in args.variants.split(",") if v]
    algos = {}
    for name in names:
        started = time.perf_counter()
        algos[name] = builds[name]().build_algo()
        print(f"{name}: built in {time.perf_counter() - started:.1f} s", flush=True)
    rows: dict[str, dict[str, list[float]]] = {n: {"infer": [], "train": []} for n in names}
    for r in range(args.warmup + args.rounds):
        for name, algo in algos.items():
            result = algo.train()
            timers = result[TIMERS]
            steps = result["env_runners"]["num_env_steps_sampled"]
            infer, train = timers[ENV_RUNNER_SAMPLING_TIMER], timers[LEARNER_UPDATE_TIMER]
            print(
                f"round {r} {name}: {steps} steps, sampling {infer:.2f} s, update {train:.2f} s",
                flush=True,
            )
            if r >= args.warmup:
                rows[name]["infer"].append(steps / infer)
                rows[name]["train"].append(steps / train)
    for algo in algos.values():
        algo.stop()

    facts = run_facts("-m bench.glam_throughput")
    g = task.glam
    lines = [
        "# GLAM: env steps/s for inference and for training, beside symbolic PPO",
        "",
        f"`{facts['command']}` ({facts['date']}, {facts['machine']}); task `{args.task}`, "
        f"GLAM model `{g.model}`, prompts of the last {g.n_obs} observations; "
        f"{args.batch} env steps per iteration ({task.env_runners.num_envs_per_env_runner} "
        f"envs, one process), {args.epochs} PPO epoch(s) of minibatch {sizes['minibatch_size']}; "
        f"{args.warmup} warm-up round(s), then medians over {args.rounds} round(s).",
        "",
        "Inference: env steps / RLlib's sampling time (policy forward passes + env). Training: "
        "env steps / the learner update's time (GAE's value pass + PPO's epochs).",
        "",
        "| variant | inference env steps/s | training env steps/s | inference ratio to ppo "
        "| training ratio to ppo |",
        "|---|---|---|---|---|",
    ]
    base = rows.get("ppo")
    for name, r in rows.items():
        inf, tr = statistics.median(r["infer"]), statistics.median(r["train"])
        ratios = ("–", "–")
        if base and name != "ppo":
            ratios = (
                f"{statistics.median(a / b for a, b in zip(r['infer'], base['infer'])):.2g}",
                f"{statistics.median(a / b for a, b in zip(r['train'], base['train'])):.2g}",
            )
        lines.append(f"| {name} | {inf:.3g} | {tr:.3g} | {ratios[0]} | {ratios[1]} |")
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "glam_throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
