"""How PPO's env steps/s scale on one machine: with the number of env runners of one trial,
and with the number of trials running at once; as ratios to the raw single-process captioned
env rate measured in the same run.

    python -m bench.scaling            # writes bench/results/scaling.{md,json}
    python -m bench.scaling --quick    # shorter, for a look

Task ``babyai-gotolocal-redball-s20``, PPO as its file sets it (batch 2048, 4 epochs), with
its greedy evaluation off (it runs in the trial's process and would blur the sampling
numbers; ``bench/evaluation_speed.py`` measures it).

- Runners: one trial, 32 envs in all, spread over 1, 2 or 4 env runners (0.5 CPU each, the
  learner in the trial's process). Env steps over the wall time of the timed iterations,
  after one warm-up iteration.
- Concurrent trials: k trials of 1 CPU each (sampling in the trial's process, 16 envs), run
  by Tune at once; each trial's env steps/s from its own reports (after its first), summed.
- Two nodes: the task's layout with both runners on the worker node of the two-node cluster
  on this machine that ``tests/cluster`` uses (needs root), the learner on the head, against
  the same layout on one node just before and after.

Run it on a quiet machine: every number here is a wall-clock rate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")

from bench.env_throughput import ENVS, ROUND_STEPS, raw_throughput

ROOT = Path(__file__).resolve().parents[1]

TASK = "babyai-gotolocal-redball-s20"


def _ppo_config(num_env_runners: int, envs_per_runner: int):
    from rl_bk.experiments.methods import get_method
    from rl_bk.experiments.task_config import load_task

    config = get_method("ppo").build(load_task(TASK), 0, {})
    config.env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=envs_per_runner)
    return config.evaluation(evaluation_interval=None)


def runner_scaling(iterations: int, runners: list[int], total_envs: int = 32) -> dict:
    out = {}
    for n in runners:
        algo = _ppo_config(n, total_envs // n).build_algo()
        try:
            steps0 = algo.train()["num_env_steps_sampled_lifetime"]
            t0 = time.perf_counter()
            for _ in range(iterations):
                result = algo.train()
            elapsed = time.perf_counter() - t0
        finally:
            algo.stop()
        out[f"{n} runner(s) x {total_envs // n} envs"] = {
            "env_runners": n, "env_steps_per_s":
            (result["num_env_steps_sampled_lifetime"] - steps0) / elapsed}  # fmt: skip
    return out


def concurrent_trials(iterations: int, counts: list[int], storage: Path) -> dict:
    from ray import tune

    out = {}
    for k in counts:
        config = _ppo_config(0, 16)
        config.resources(num_cpus_for_main_process=1)
        tuner = tune.Tuner(
            "PPO", param_space=config.to_dict(),
            tune_config=tune.TuneConfig(num_samples=k, max_concurrent_trials=k),
            run_config=tune.RunConfig(name=f"concurrent-{k}", storage_path=str(storage),
                                      stop={"training_iteration": iterations + 1}, verbose=0),
        )  # fmt: skip
        rates = []
        for result in tuner.fit():
            df = result.metrics_dataframe
            steps, seconds = df["num_env_steps_sampled_lifetime"], df["time_total_s"]
            rates.append(float((steps.iloc[-1] - steps.iloc[0])
                               / (seconds.iloc[-1] - seconds.iloc[0])))  # fmt: skip
        out[f"{k} trial(s) at once"] = {"trials": k, "env_steps_per_s_total": sum(rates),
                                        "env_steps_per_s_each": rates}  # fmt: skip
    return out


def cluster_driver(iterations: int, address: str) -> None:
    """Run as a driver of the two-node cluster: PPO with the task's 2 runners (on the worker
    node: the head has no CPUs) and its learner in this process; prints env steps/s."""
    import ray

    import env_registry

    ray.init(address=address, logging_level="ERROR")
    env_registry.register_all()
    print("CLUSTER_RATE", runner_scaling(iterations, [2])["2 runner(s) x 16 envs"]
          ["env_steps_per_s"])  # fmt: skip


def two_node_rate(iterations: int, log_dir: Path) -> dict:
    """The task's layout with its runners on another node (the two-node cluster on this
    machine of ``tests/cluster``: token auth, the worker in its own mount namespace); or why
    it cannot run here."""
    import subprocess

    from tests.cluster.two_nodes import TwoNodeCluster, can_run

    why = can_run()
    if why:
        return {"skipped": why}
    os.environ.setdefault("PYTHONPATH", str(ROOT))  # the nodes import this checkout
    # The worker hides one empty folder (the class always hides some, as a worker node would).
    cluster = TwoNodeCluster([log_dir / "hidden"], head_cpus=0, worker_cpus=1,
                             log_dir=log_dir).start()  # fmt: skip
    try:
        # PYTHONPATH (and the working folder) is this checkout: bench imports as a package
        code = ("from bench.scaling import cluster_driver; "
                f"cluster_driver({iterations}, {cluster.address!r})")  # fmt: skip
        env = {**cluster.env, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=900)  # fmt: skip
    finally:
        cluster.stop()
    rates = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("CLUSTER")]
    if not rates:
        return {"skipped": f"the driver failed: {done.stderr[-500:]}"}
    return {"env_steps_per_s": float(rates[0])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--no-cluster", action="store_true",
                   help="skip the two-node row (it needs root, for a private mount namespace)")
    args = p.parse_args(argv)
    iterations, pairs = (3, 6) if args.quick else (10, 20)

    import tempfile

    import ray

    import env_registry

    raw = raw_throughput(ENVS["babyai"], ROUND_STEPS["babyai"], pairs)["steps_per_s_captioned"]
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
             logging_level="ERROR")  # fmt: skip
    env_registry.register_all()
    try:
        runners = runner_scaling(iterations, [1, 2, 4])
        with tempfile.TemporaryDirectory() as storage:
            trials = concurrent_trials(iterations, [1, 2], Path(storage))
    finally:
        ray.shutdown()
    cluster: dict = {"skipped": "--no-cluster"}
    if not args.no_cluster:
        with tempfile.TemporaryDirectory() as logs:
            cluster = two_node_rate(iterations, Path(logs))
        # The same layout on one node again, after, against drift.
        ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                 logging_level="ERROR")  # fmt: skip
        env_registry.register_all()
        try:
            after = runner_scaling(iterations, [2])
        finally:
            ray.shutdown()
        one_node = [runners["2 runner(s) x 16 envs"]["env_steps_per_s"],
                    after["2 runner(s) x 16 envs"]["env_steps_per_s"]]  # fmt: skip
        cluster["one_node_before_after"] = one_node
    raw_after = raw_throughput(ENVS["babyai"], ROUND_STEPS["babyai"], pairs)
    raw = (raw + raw_after["steps_per_s_captioned"]) / 2  # before and after, against drift

    command = "python -m bench.scaling" + (" --quick" if args.quick else "")
    meta = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
            "load_average_at_end": os.getloadavg()}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps(
        {"meta": meta, "raw_captioned_steps_per_s": raw, "runners": runners,
         "concurrent_trials": trials, "two_nodes": cluster}, indent=2))  # fmt: skip
    lines = ["# PPO throughput: how it scales on one machine", "",
             f"Command: `{command}` — {meta['date']}, {meta['machine']}, load average at end "
             f"{meta['load_average_at_end'][0]:.1f}. Task `{TASK}`, PPO as its file sets it "
             "(batch 2048, 4 epochs of 256), evaluation off. Raw single-process captioned env "
             f"rate, same run (mean of before and after): {raw:.0f} steps/s.", "",
             "## Env runners of one trial (32 envs in all, 0.5 CPU each)", "",
             "| layout | env steps/s | over raw |", "|---|---|---|"]  # fmt: skip
    for name, r in runners.items():
        lines.append(f"| {name} | {r['env_steps_per_s']:.0f} | "
                     f"{r['env_steps_per_s'] / raw:.2f} |")  # fmt: skip
    lines += ["", "## Trials at once (1 CPU each: 16 envs sampled in the trial's process)", "",
              "| trials | env steps/s, all trials | each | over raw |", "|---|---|---|---|"]
    for name, r in trials.items():
        each = ", ".join(f"{x:.0f}" for x in r["env_steps_per_s_each"])
        lines.append(f"| {name} | {r['env_steps_per_s_total']:.0f} | {each} | "
                     f"{r['env_steps_per_s_total'] / raw:.2f} |")  # fmt: skip
    lines += ["", "## The task's layout with its env runners on another node", ""]
    if "env_steps_per_s" in cluster:
        before, after = cluster["one_node_before_after"]
        lines += ["Two Ray nodes on this machine (`tests/cluster/two_nodes.py`: token auth, the "
                  "worker in a mount namespace of its own); the head has no CPUs, so both "
                  "runners (0.5 CPU each) run on the worker and send their episodes across; "
                  "the learner is in the driver, on the head, as in the one-node rows.", "",
                  "| layout | env steps/s | over raw |", "|---|---|---|",
                  f"| 2 runners on the other node | {cluster['env_steps_per_s']:.0f} | "
                  f"{cluster['env_steps_per_s'] / raw:.2f} |",
                  f"| 2 runners on the learner's node (before, after) | {before:.0f}, "
                  f"{after:.0f} | {(before + after) / 2 / raw:.2f} |"]  # fmt: skip
    else:
        lines.append(f"Not measured: {cluster['skipped']}")
    from bench.study import write_keeping_reading

    write_keeping_reading(args.out / "scaling.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
