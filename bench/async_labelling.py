"""What asynchronous online labelling costs: ONI-PPO env steps/s with labels asked for and
received while training, over the same algorithm with labelling off, side by side in one run.

    python -m bench.async_labelling              # writes bench/results/async_labelling.{md,json}
    python -m bench.async_labelling --rounds 3   # a quicker look

The task's own setup (tune_configs/nethack-score.yaml: NetHack Score, ONI's message-line
captions, 1 env runner x 8 envs, train batch 4096). Configurations, all built up front and
trained one iteration each per round (bench/paired_rounds.py):

- ``oni-none``: the same connector, reward type none: no labels (the baseline);
- ``oni-retrieval oracle``: every new message queued and labelled in a thread beside the
  learner; the oracle answers at once, so this is the cost of the mechanism itself (queue,
  lookups, store writes);
- ``oni-classification oracle``: the same, plus fitting the learner-only classifier on the
  labels after every update;
- ``oni-retrieval llamacpp busy <f>`` (unless --no-llm), one per ``--busy-fractions``: the
  embedded SmolLM2 labelling in a Ray actor process of its own (one llama.cpp thread, nice
  +10), computing at most the fraction ``f`` of the time (``label_busy_fraction``; 1 = flat
  out) with ``--llm-batch`` captions per call. On this 2-core machine it competes with the env
  runner and the learner for the CPU. ONI ran its LLM on a separate GPU node; so can we (the
  Serve labeler app on another node, ``LabelerSpec(url=...)``).

Each LLM configuration's labeler is paused (after its call in flight) while the other
configurations train, so the baseline is timed with no LLM computing, and each LLM
configuration with its own labeler running as it would in training.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

TASK = "nethack-score"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--no-llm", action="store_true", help="skip the llamacpp configurations")
    p.add_argument(
        "--busy-fractions",
        default="1,0.5,0.25",
        help="label_busy_fraction of each llamacpp configuration",
    )
    p.add_argument(
        "--llm-batch",
        type=int,
        default=2,
        help="captions per llama.cpp call (small, so the duty cycle is fine-grained)",
    )
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args()

    import tempfile

    import ray

    import env_registry
    from bench.paired_rounds import ratio_rows, ratio_table, run_facts, train_in_rounds
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    # A fresh label store: labels from an earlier run would make the LLM's work look free.
    os.environ["RLBK_LABEL_STORE"] = str(Path(tempfile.mkdtemp()) / "labels.sqlite3")
    task = load_task(TASK)
    configs = {
        "oni-none": ("oni-none", {"backend": "oracle"}),
        "oni-retrieval oracle": ("oni-retrieval", {"backend": "oracle"}),
        "oni-classification oracle": ("oni-classification", {"backend": "oracle"}),
    }
    if not args.no_llm:
        for f in (float(x) for x in args.busy_fractions.split(",") if x):
            configs[f"oni-retrieval llamacpp busy {f:g}"] = (
                "oni-retrieval",
                {
                    "backend": "llamacpp",
                    "label_busy_fraction": f,
                    "label_batch_size": args.llm_batch,
                },
            )
    ray.init(
        address="local", num_cpus=2 * len(configs), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    algos = {
        name: get_method(m).build(task, 0, params).build_algo()
        for name, (m, params) in configs.items()
    }
    queues = {name: label_queue(algos[name]) for name in configs if "llamacpp" in name}
    labels: dict[str, dict] = {}
    window_start: dict[str, float] = {}
    windows: dict[str, list[tuple[float, float]]] = {name: [] for name in queues}

    def only_its_own_labeler_runs(name: str) -> None:
        for other, q in queues.items():
            if other != name:
                q.pause()
        if name in queues:
            queues[name].resume()
        window_start[name] = time.perf_counter()

    def keep_label_counts(name: str, result: dict) -> None:
        if name in windows:  # a timed iteration: when its labeler could compute
            windows[name].append((window_start[name], time.perf_counter()))
        learners = result["learners"]
        labels[name] = {
            k.split("/", 1)[1]: float(v)
            for k, v in learners.items()
            if k.startswith("intrinsic/label")
        }

    try:
        rates = train_in_rounds(
            algos, args.rounds, args.warmup, keep_label_counts, only_its_own_labeler_runs
        )
    finally:
        for q in queues.values():  # before Ray goes, so no call is left to fail
            q.close()
        for a in algos.values():
            a.stop()
    rows = ratio_rows(rates, "oni-none")
    # How much of the timed training its labeler computed in: the measured busy fraction
    # (calls in flight when an iteration ended finish untimed, before the next one starts).
    busy = {
        name: computing_share(list(q.call_intervals), windows[name]) for name, q in queues.items()
    }
    facts = {
        **run_facts("-m bench.async_labelling"),
        "task": TASK,
        "rounds": args.rounds,
        "warmup": args.warmup,
        "llm_batch": args.llm_batch,
        "rows": rows,
        "rates": rates,
        "labels_at_the_end": labels,
        "labeler_computing_share": busy,
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "async_labelling.json").write_text(json.dumps(facts, indent=2))
    table = ratio_table(rows, "configuration", "no labelling")
    shares = "\n".join(f"- {name}: {share:.2f}" for name, share in busy.items())
    counts = "\n".join(
        f"- {name}: {c.get('labels_requested', 0):.0f} requested, "
        f"{c.get('labels_received', 0):.0f} received, {c.get('labels_pending', 0):.0f} "
        f"pending, {c.get('labelling_seconds', 0):.1f} s labelling, "
        f"{c.get('labelling_rest_seconds', 0):.1f} s resting"
        for name, c in labels.items()
        if c
    )
    (args.results / "async_labelling.md").write_text(
        f"# Asynchronous labelling cost: {TASK}\n\n`{facts['command']}` ({facts['date']}, "
        f"{facts['machine']}); {args.rounds} rounds after {args.warmup} warm-up rounds, one "
        "training iteration (4096 env steps, sampling + learning) per configuration per "
        "round; llama.cpp labels "
        f"{args.llm_batch} captions per call and is paused while other configurations train."
        "\n\n"
        + table
        + "\n\nShare of the timed training time in which the LLM computed (its calls "
        "overlapping the iterations' wall time):\n\n"
        + shares
        + "\n\nLabels at the end:\n\n"
        + counts
        + "\n"
    )
    print(table)
    print(shares)
    print(counts)
    return 0


def computing_share(calls: list[tuple[float, float]], windows: list[tuple[float, float]]) -> float:
    """The share of the windows' total length covered by the calls (neither overlaps itself)."""
    total = sum(b - a for a, b in windows)
    covered = sum(max(0.0, min(b, d) - max(a, c)) for a, b in windows for c, d in calls)
    return covered / total if total else float("nan")


def label_queue(algo):
    """The label queue of an ONI algorithm's (local) learner connector."""
    from rl_bk.connectors.learner.intrinsic_rewards import IntrinsicReward
    from rl_bk.connectors.learner.reward_rewrite import RewriteRewards

    learner = algo.learner_group._learner
    (term,) = [
        t
        for c in learner._learner_connector.connectors
        if isinstance(c, RewriteRewards)
        for t in c.terms
        if isinstance(t, IntrinsicReward)
    ]
    return term.reward_fn.queue


if __name__ == "__main__":
    sys.exit(main())
