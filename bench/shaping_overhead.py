"""What potential-based shaping costs: shaped-PPO env steps/s over plain-PPO env steps/s.

    python bench/shaping_overhead.py            # writes bench/results/shaping_overhead.{md,json}
    python bench/shaping_overhead.py --rounds 3 # a quicker look

The task's own setup (tune_configs/babyai-gotolocal-redball-s20.yaml: 2 env runners x 16
envs, train batch 2048, 4 epochs); plain PPO and PPO shaped by each bk-* potential (oracle
knowledge, built first if missing) are all built up front, then trained one iteration each
in turn, round after round, so that load from other processes on this shared machine hits
them alike. Env steps/s of an iteration = env steps sampled / the iteration's wall time
(sampling and learning, so the learner-side shaping is inside it). The ratio is the median
over rounds of (shaped / plain) in the same round; the first rounds are warm-up.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASK = "babyai-gotolocal-redball-s20"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--kinds", default="bk-code,bk-pref,bk-goal")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args()

    import ray

    import env_registry
    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task
    from rl_bk.knowledge.pipeline import build_knowledge

    task = load_task(TASK)
    kinds = [k for k in args.kinds.split(",") if k]
    ray.init(num_cpus=2 * (len(kinds) + 1), include_dashboard=False, logging_level="ERROR")
    env_registry.register_all()
    for kind in kinds:
        build_knowledge(task, kind, "oracle")
    names = ["ppo", *kinds]
    algos = {n: get_method(n).build(task, 0, {}).build_algo() for n in names}
    rates: dict[str, list[float]] = {n: [] for n in names}
    try:
        for r in range(args.warmup + args.rounds):
            for n in names:
                t0 = time.perf_counter()
                result = algos[n].train()
                seconds = time.perf_counter() - t0
                steps = result["env_runners"]["num_env_steps_sampled"]
                if r >= args.warmup:
                    rates[n].append(steps / seconds)
            print(f"round {r}: " + ", ".join(f"{n} {rates[n][-1]:.0f}/s" for n in names
                                              if rates[n]))  # fmt: skip
    finally:
        for a in algos.values():
            a.stop()
    rows = []
    for n in names:
        ratios = [s / b for s, b in zip(rates[n], rates["ppo"])]
        rows.append({"method": n, "median env steps/s": statistics.median(rates[n]),
                     "median ratio to plain PPO (same round)": statistics.median(ratios),
                     "min ratio": min(ratios), "max ratio": max(ratios)})  # fmt: skip
    command = "python bench/shaping_overhead.py " + " ".join(sys.argv[1:])
    facts = {
        "command": command.strip(),
        "machine": f"{platform.node()} {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rounds": args.rounds,
        "warmup": args.warmup,
        "rows": rows,
        "rates": rates,
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "shaping_overhead.json").write_text(json.dumps(facts, indent=2))
    lines = [
        "| method | median env steps/s | ratio to plain PPO (median, same round) | min | max |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(f"| {row['method']} | {row['median env steps/s']:.0f} | "
                     f"{row['median ratio to plain PPO (same round)']:.2f} | "
                     f"{row['min ratio']:.2f} | {row['max ratio']:.2f} |")  # fmt: skip
    table = "\n".join(lines)
    (args.results / "shaping_overhead.md").write_text(
        f"# Shaping overhead: {TASK}\n\n`{facts['command']}` ({facts['date']}, "
        f"{facts['machine']}); {args.rounds} rounds after {args.warmup} warm-up rounds, "
        "one training iteration (2048 env steps, sampling + learning) per method per round, "
        "oracle knowledge.\n\n" + table + "\n"
    )  # fmt: skip
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
