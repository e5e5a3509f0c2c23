"""How PPO's env steps/s scale on one machine: with the number of env runners of one trial,
and with the number of trials running at once; as ratios to the raw single-process captioned
env rate measured in the same run.

    python -m bench.scaling            # writes bench/results/scaling.{md,json}
    python -m bench.scaling --quick    # shorter, for a look

Task ``babyai-gotolocal-redball-s20``, PPO as its file sets it (the report says how), with
its greedy evaluation off (it runs in the trial's process and would blur the sampling
numbers; ``bench/results/evaluation_speed.md`` measures it).

- Runners: one trial, 32 envs in all, spread over 1, 2 or 4 env runners (0.5 CPU each, the
  learner in the trial's process). Env steps over the wall time of the timed iterations,
  after one warm-up iteration.
- Concurrent trials: k trials of 1 CPU each (sampling in the trial's process, 16 envs, the
  learner on one torch thread), run by Tune at once; each trial's env steps/s from its own
  reports (after its first), summed.
- Two nodes: two runners x 16 envs on the worker node of the two-node cluster on this
  machine that ``tests/cluster`` uses (needs root), the learner on the head, against the same
  layout on one node just before and after; on PPO and on APPO (the task file's APPO
  settings: the learner updates while the runners sample, so the other node's episodes
  arrive while it trains) and on APPO with RLlib's own main loop, which polls the runners
  without pause; each row with RLlib's timers and the samples trained per env step.

Run it on a quiet machine: every number here is a wall-clock rate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

from bench.env_throughput import (
    APPO_TIMERS,
    ENVS,
    LEARNER_THREAD_TIMERS,
    ROUND_STEPS,
    TIMERS,
    _s,
    network,
    raw_throughput,
    timed_run,
)

#: RLlib's own main loop, which polls the env runners without pause (rl-bk's APPO waits up to
#: ``appo.timeout_s_sampler_manager`` seconds for their samples in each training step).
RLLIB_POLLING = {"timeout_s_sampler_manager": 0.0}

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"


#: The two-node rows: PPO, APPO as the task files set it, and APPO with RLlib's own main loop
#: (``timeout_s_sampler_manager`` 0: it polls the runners without pause).
ALGORITHMS = ("ppo", "appo", "appo-polling")
ROW_NAMES = {"ppo": "PPO", "appo": "APPO", "appo-polling": "APPO, RLlib's polling"}


def _ppo_config(
    num_env_runners: int,
    envs_per_runner: int,
    algorithm: str = "ppo",
    learner_threads: int | None = None,
):
    """The ``ppo`` method on the task, on ``algorithm`` (RLlib's PPO or APPO); the learner on
    the task's torch threads unless ``learner_threads`` says otherwise."""
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    task = load_task(TASK)
    update: dict = {"algorithm": algorithm}
    if learner_threads is not None:
        update["learner"] = task.learner.model_copy(update={"threads": learner_threads})
    if algorithm == "appo-polling":
        update |= {"algorithm": "appo", "appo": task.appo.model_copy(update=RLLIB_POLLING)}
    task = task.model_copy(update=update)
    config = get_method("ppo").build(task, 0, {})
    config.env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=envs_per_runner)
    return config.evaluation(evaluation_interval=None)


def runner_scaling(
    iterations: int, runners: list[int], total_envs: int = 32, algorithm: str = "ppo"
) -> dict:
    """Per runner count: env steps/s over ``iterations`` after a warm-up one, with RLlib's
    timers (:func:`bench.env_throughput.timed_run`), so a row says where its time went."""
    appo = algorithm.startswith("appo")
    out = {}
    for n in runners:
        run = timed_run(
            _ppo_config(n, total_envs // n, algorithm),
            iterations,
            APPO_TIMERS if appo else TIMERS,
            LEARNER_THREAD_TIMERS if appo else None,
        )
        out[f"{n} runner(s) x {total_envs // n} envs"] = {
            "env_runners": n,
            "env_steps_per_s": run["env_steps_per_s"],
            "timers_s": {
                **run["timers_s"],
                "s per iteration": run["iteration_s"],
                "samples trained per env step": run["samples_trained_per_env_step"],
            },
        }
    return out


def concurrent_trials(iterations: int, counts: list[int], storage: Path) -> dict:
    from ray import tune

    out = {}
    for k in counts:
        # One CPU each: the learner on one torch thread, or k trials oversubscribe the cores.
        config = _ppo_config(0, 16, learner_threads=1)
        config.resources(num_cpus_for_main_process=1)
        tuner = tune.Tuner(
            "PPO",
            param_space=config.to_dict(),
            tune_config=tune.TuneConfig(num_samples=k, max_concurrent_trials=k),
            run_config=tune.RunConfig(
                name=f"concurrent-{k}",
                storage_path=str(storage),
                stop={"training_iteration": iterations + 1},
                verbose=0,
            ),
        )
        rates = []
        for result in tuner.fit():
            df = result.metrics_dataframe
            steps, seconds = df["num_env_steps_sampled_lifetime"], df["time_total_s"]
            rates.append(
                float((steps.iloc[-1] - steps.iloc[0]) / (seconds.iloc[-1] - seconds.iloc[0]))
            )
        out[f"{k} trial(s) at once"] = {
            "trials": k,
            "env_steps_per_s_total": sum(rates),
            "env_steps_per_s_each": rates,
        }
    return out


def cluster_driver(iterations: int, address: str, algorithm: str = "ppo") -> None:
    """Run as a driver of the two-node cluster: ``algorithm`` with 2 runners (on the worker
    node: the head has no CPUs) and its learner in this process; prints env steps/s."""
    import ray

    import env_registry

    ray.init(address=address, logging_level="ERROR")
    env_registry.register_all()
    row = runner_scaling(iterations, [2], algorithm=algorithm)["2 runner(s) x 16 envs"]
    print("CLUSTER_RESULT", json.dumps(row))


def two_node_rates(iterations: int, log_dir: Path, algorithms=ALGORITHMS) -> dict:
    """Per algorithm, two runners on another node (the two-node cluster on this machine of
    ``tests/cluster``: token auth, the worker in its own mount namespace): env steps/s, or why
    it could not run."""
    import subprocess

    from tests.cluster.two_nodes import TwoNodeCluster, can_run

    why = can_run()
    if why:
        return {a: {"skipped": why} for a in algorithms}
    os.environ.setdefault("PYTHONPATH", str(ROOT))  # the nodes import this checkout
    # The worker hides one empty folder (the class always hides some, as a worker node would).
    cluster = TwoNodeCluster(
        [log_dir / "hidden"], head_cpus=0, worker_cpus=1, log_dir=log_dir
    ).start()
    out = {}
    try:
        for algorithm in algorithms:
            # PYTHONPATH (and the working folder) is this checkout: bench imports as a package
            code = (
                "from bench.scaling import cluster_driver; "
                f"cluster_driver({iterations}, {cluster.address!r}, {algorithm!r})"
            )
            env = {**cluster.env, "PYTHONPATH": str(ROOT)}
            done = subprocess.run(
                [sys.executable, "-c", code],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=900,
            )
            rows = [
                json.loads(line.split(" ", 1)[1])
                for line in done.stdout.splitlines()
                if line.startswith("CLUSTER_RESULT ")
            ]
            out[algorithm] = (
                {k: rows[0][k] for k in ("env_steps_per_s", "timers_s")}
                if rows
                else {"skipped": f"the driver failed: {done.stderr[-500:]}"}
            )
    finally:
        cluster.stop()
    return out


def one_node_rates(iterations: int, algorithms=ALGORITHMS) -> dict[str, dict]:
    """Per algorithm, the two-node rows' layout with everything on this one node."""
    import ray

    import env_registry

    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    try:
        return {
            a: runner_scaling(iterations, [2], algorithm=a)["2 runner(s) x 16 envs"]
            for a in algorithms
        }
    finally:
        ray.shutdown()


def cluster_rows(cluster: dict, raw: float) -> list[str]:
    """The two-node section's markdown: per algorithm, the other node against this one."""
    measured = {a: r for a, r in cluster.items() if "env_steps_per_s" in r}
    if not measured:
        return ["Not measured: " + "; ".join(f"{a}: {r['skipped']}" for a, r in cluster.items())]
    lines = [
        "Two Ray nodes on this machine (`tests/cluster/two_nodes.py`: token auth, the "
        "worker in a mount namespace of its own); the head has no CPUs, so both runners "
        "(0.5 CPU each, 16 envs each) run on the worker and send their episodes across; "
        "the learner is in the driver, on the head, as in the one-node rows. APPO: the "
        "task file's APPO settings (the learner trains on one batch while the runners "
        "sample the next; each training step waits up to "
        "`appo.timeout_s_sampler_manager` for their samples); RLlib's polling: the same "
        "with RLlib's default, 0 s, a main loop that polls the runners without pause. "
        "The same layout on one node just before and after.",
        "",
        "| algorithm | runners on the other node | over raw | on the learner's node "
        "(before, after) | over raw | other node / same node |",
        "|---|---|---|---|---|---|",
    ]
    for algorithm, r in cluster.items():
        if "env_steps_per_s" not in r:
            lines.append(f"| {ROW_NAMES[algorithm]} | not measured: {r['skipped']} | | | | |")
            continue
        before, after = r["one_node_before_after"]
        same = (before + after) / 2
        lines.append(
            f"| {ROW_NAMES[algorithm]} | {r['env_steps_per_s']:.0f} | "
            f"{r['env_steps_per_s'] / raw:.2f} | {before:.0f}, {after:.0f} | "
            f"{same / raw:.2f} | {r['env_steps_per_s'] / same:.2f} |"
        )
    timed = {a: r for a, r in measured.items() if "timers_s" in r}
    if timed:
        lines += [
            "",
            "Wall time per timed iteration, then RLlib's timers in the same rows, "
            "seconds per iteration (as "
            "`env_throughput.md` defines them; then the env runners' share of their time in "
            "`sample()`, and the samples the learner trained on per env step sampled: "
            "APPO's circular buffer drops batches its learner had no time for, so a "
            "faster row may be one that trains less):",
            "",
            "| algorithm | runners on | " + " | ".join(TIMER_HEADS) + " |",
            "|---|---|" + "---|" * len(TIMER_HEADS),
        ]
        for algorithm, r in timed.items():
            places = [("the other node", r["timers_s"])]
            places += [
                (f"the learner's node ({when})", t)
                for when, t in zip(("before", "after"), r.get("one_node_timers_s", []))
            ]
            for place, t in places:
                lines.append(
                    f"| {ROW_NAMES[algorithm]} | {place} | "
                    + " | ".join(_s(t.get(k, math.nan)) for k in TIMER_HEADS)
                    + " |"
                )
    return lines


#: The timers the two-node rows show (keys of ``timed_run``'s ``timers_s``).
TIMER_HEADS = (
    "s per iteration",
    "sampling",
    "learner update",
    "learner thread update",
    "learner thread waiting",
    "env runners sampling share",
    "samples trained per env step",
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument(
        "--no-cluster",
        action="store_true",
        help="skip the two-node row (it needs root, for a private mount namespace)",
    )
    args = p.parse_args(argv)
    iterations, pairs = (3, 6) if args.quick else (10, 20)

    import tempfile

    import ray

    import env_registry
    from rl_bk.experiments.task_config import load_task

    raw = raw_throughput(ENVS["babyai"], ROUND_STEPS["babyai"], pairs)["steps_per_s_captioned"]
    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    try:
        runners = runner_scaling(iterations, [1, 2, 4])
        with tempfile.TemporaryDirectory() as storage:
            trials = concurrent_trials(iterations, [1, 2], Path(storage))
    finally:
        ray.shutdown()
    cluster: dict = {a: {"skipped": "--no-cluster"} for a in ALGORITHMS}
    if not args.no_cluster:
        before = one_node_rates(iterations)
        with tempfile.TemporaryDirectory() as logs:
            cluster = two_node_rates(iterations, Path(logs))
        after = one_node_rates(iterations)  # the same layouts on one node again, against drift
        for algorithm, r in cluster.items():
            r["one_node_before_after"] = [
                before[algorithm]["env_steps_per_s"],
                after[algorithm]["env_steps_per_s"],
            ]
            r["one_node_timers_s"] = [before[algorithm]["timers_s"], after[algorithm]["timers_s"]]
    raw_after = raw_throughput(ENVS["babyai"], ROUND_STEPS["babyai"], pairs)
    raw = (raw + raw_after["steps_per_s_captioned"]) / 2  # before and after, against drift

    ppo = _ppo_config(2, 16)
    settings = (
        f"batch {ppo.train_batch_size_per_learner}, {ppo.num_epochs} epochs of "
        f"{ppo.minibatch_size}, {network(load_task(TASK))}, the learner on "
        f"{load_task(TASK).learner.threads or 1} torch thread(s); 1 in the "
        "concurrent trials"
    )
    command = "python -m bench.scaling" + (" --quick" if args.quick else "")
    meta = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "load_average_at_end": os.getloadavg(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(
        json.dumps(
            {
                "meta": meta,
                "raw_captioned_steps_per_s": raw,
                "runners": runners,
                "concurrent_trials": trials,
                "two_nodes": cluster,
            },
            indent=2,
        )
    )
    lines = [
        "# Throughput: how PPO scales on one machine, and PPO and APPO across two nodes",
        "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, load average at end "
        f"{meta['load_average_at_end'][0]:.1f}. Task `{TASK}`, PPO as its file sets it "
        f"({settings}), evaluation off. Raw single-process captioned env "
        f"rate, same run (mean of before and after): {raw:.0f} steps/s.",
        "",
        "## Env runners of one trial (32 envs in all, 0.5 CPU each)",
        "",
        "| layout | env steps/s | over raw |",
        "|---|---|---|",
    ]
    for name, r in runners.items():
        lines.append(f"| {name} | {r['env_steps_per_s']:.0f} | {r['env_steps_per_s'] / raw:.2f} |")
    lines += [
        "",
        "## Trials at once (1 CPU each: 16 envs sampled in the trial's process)",
        "",
        "| trials | env steps/s, all trials | each | over raw |",
        "|---|---|---|---|",
    ]
    for name, r in trials.items():
        each = ", ".join(f"{x:.0f}" for x in r["env_steps_per_s_each"])
        lines.append(
            f"| {name} | {r['env_steps_per_s_total']:.0f} | {each} | "
            f"{r['env_steps_per_s_total'] / raw:.2f} |"
        )
    lines += ["", "## Env runners on another node", ""]
    lines += cluster_rows(cluster, raw)
    from bench.results_files import write_keeping_reading

    write_keeping_reading(args.out / "scaling.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
