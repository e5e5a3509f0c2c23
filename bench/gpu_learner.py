"""The learner on a GPU (``learner.num_gpus: 1``) against the CPU, on BK's task and network.

    python -m bench.gpu_learner                          # ppo, bk-code, bk-pref, rnd; 6 iterations
    python -m bench.gpu_learner --methods ppo --iterations 10

BK's layout (``tune_configs/babyai-gotolocal-redball-s20.yaml``: two env runners of 4 envs,
1,024 env steps an iteration, 4 epochs of 4 minibatches of 256 through BK's conv network) with
the learner in this process, once on the CPU (the task's ``learner.threads``) and once on the
GPU, each method in a fresh Algorithm, the two devices side by side in the same run. Reports
per iteration RLlib's sampling and learner-update timers and the wall time (the first
iteration, which builds and warms up, is left out of the medians), that each loss is finite,
and the device the learner's module lives on. Writes ``bench/results/gpu_learner.json``
(appended, with the GPU's name and the command) and prints the rows. The knowledge is read
where trials read it (``RLBK_KNOWLEDGE_DIR``, else ``~/.cache/rl-bk/knowledge``); build it
first with ``rl-bk knowledge build --task babyai-gotolocal-redball-s20``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "babyai-gotolocal-redball-s20"


def run_variant(method: str, num_gpus: float, iterations: int) -> dict:
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    task = load_task(TASK)
    task = task.model_copy(
        update={"learner": task.learner.model_copy(update={"num_gpus": num_gpus})}
    )
    algo = get_method(method).build(task, 0, {}).build_algo()
    entry = {
        "method": method,
        "learner": "gpu" if num_gpus else "cpu",
        "learner_threads": task.learner.threads,
        "iterations": [],
    }
    try:
        for _ in range(iterations):
            started = time.perf_counter()
            result = algo.train()
            timers = result["timers"]
            learner = result["learners"]["default_policy"]
            entry["iterations"].append(
                {
                    "wall_s": round(time.perf_counter() - started, 3),
                    "env_steps": int(result["env_runners"]["num_env_steps_sampled"]),
                    "sampling_s": round(float(timers["env_runner_sampling_timer"]), 3),
                    "learner_update_s": round(float(timers["learner_update_timer"]), 3),
                    "losses_finite": all(
                        math.isfinite(float(learner[k])) for k in ("policy_loss", "vf_loss")
                    ),
                }
            )
        (entry["module_device"],) = [
            r.get()
            for r in algo.learner_group.foreach_learner(
                lambda lrn: str(next(lrn.module["default_policy"].parameters()).device)
            )
        ]
    finally:
        algo.stop()
    rows = entry["iterations"][1:] or entry["iterations"]
    for key in ("wall_s", "sampling_s", "learner_update_s"):
        entry[f"median_{key}"] = round(statistics.median(r[key] for r in rows), 3)
    entry["env_steps_per_s"] = round(rows[-1]["env_steps"] / entry["median_wall_s"], 1)
    print(json.dumps({k: v for k, v in entry.items() if k != "iterations"}), flush=True)
    return entry


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="ppo,bk-code,bk-pref,rnd")
    p.add_argument("--iterations", type=int, default=6, help="per method and device")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "gpu_learner.json")
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print(
            "bench.gpu_learner compares the learner on a GPU with the CPU: torch sees no CUDA GPU",
            file=sys.stderr,
        )
        return 2
    import env_registry
    from rl_bk.experiments import run as run_module

    run_module.init_ray(None)  # the runtime environment tune_run.py gives its trials
    env_registry.register_all()
    old = json.loads(args.results.read_text()) if args.results.is_file() else []
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    head = {
        "date": stamp,
        "device": torch.cuda.get_device_name(0),
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
    }
    entries = []
    for method in args.methods.split(","):
        for num_gpus in (0.0, 1.0):  # side by side, CPU first
            try:
                entry = run_variant(method, num_gpus, args.iterations)
            except Exception as e:  # one method's failure must not lose the others' rows
                print(f"{method} learner.num_gpus={num_gpus:g} failed: {e!r}", flush=True)
                entry = {
                    "method": method,
                    "learner": "gpu" if num_gpus else "cpu",
                    "error": repr(e),
                }
            entries.append({**head, **entry})
            # Written after each variant: a run cut short keeps what it measured.
            args.results.write_text(json.dumps(old + entries, indent=1) + "\n")
    print(f"appended to {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
