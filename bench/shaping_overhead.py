"""What potential-based shaping costs: shaped-PPO env steps/s over plain-PPO env steps/s.

    python -m bench.shaping_overhead            # writes bench/results/shaping_overhead.{md,json}
    python -m bench.shaping_overhead --rounds 3 # a quicker look

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
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

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
    from bench.paired_rounds import ratio_rows, ratio_table, run_facts, train_in_rounds
    from rl_bk.experiments.knowledge_pipeline import build_knowledge
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    task = load_task(TASK)
    kinds = [k for k in args.kinds.split(",") if k]
    ray.init(
        address="local",
        num_cpus=2 * (len(kinds) + 1),
        include_dashboard=False,
        logging_level="ERROR",
    )
    env_registry.register_all()
    for kind in kinds:
        build_knowledge(task, kind, "oracle")
    names = ["ppo", *kinds]
    algos = {n: get_method(n).build(task, 0, {}).build_algo() for n in names}
    try:
        rates = train_in_rounds(algos, args.rounds, args.warmup)
    finally:
        for a in algos.values():
            a.stop()
    rows = ratio_rows(rates, "ppo")
    facts = {
        **run_facts("-m bench.shaping_overhead"),
        "rounds": args.rounds,
        "warmup": args.warmup,
        "rows": rows,
        "rates": rates,
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "shaping_overhead.json").write_text(json.dumps(facts, indent=2))
    table = ratio_table(rows, "method", "plain PPO")
    (args.results / "shaping_overhead.md").write_text(
        f"# Shaping overhead: {TASK}\n\n`{facts['command']}` ({facts['date']}, "
        f"{facts['machine']}); {args.rounds} rounds after {args.warmup} warm-up rounds, "
        "one training iteration (2048 env steps, sampling + learning) per method per round, "
        "oracle knowledge.\n\n" + table + "\n"
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
