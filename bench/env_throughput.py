"""Env throughput: raw steps/s per env family with and without captions, and each family's
task on PPO and on APPO in the task file's layout, as ratios measured side by side in one run.

    python -m bench.env_throughput           # writes bench/results/env_throughput.{md,json}
    python -m bench.env_throughput --quick   # shorter, for a look
    python -m bench.env_throughput --appo-only [--families babyai,nethack]
                                             # PPO against APPO alone: rewrites that section

Raw: one process, uniformly random actions, resets included. Captioned and uncaptioned envs
run in 30 pairs of adjacent short rounds; steps/s are the median rounds (wall clock), and the
caption's share of step time is the median over pairs of the CPU-time difference, so that
load from other processes on this shared machine hits both alike.

PPO against APPO: each family's task (babyai-gotolocal-redball-s20, crafter-text,
nethack-score) as its file sets it, built by the ``ppo`` method with ``algorithm: ppo`` and
with ``algorithm: appo``, evaluation off (training throughput). Two rounds of each (one with
--quick), PPO first in the first round and APPO first in the second, each a fresh build, one
warm-up iteration, then the timed ones; env steps/s pooled over the rounds, over the family's
raw captioned rate measured just before its rounds. RLlib's own timers say where an
iteration's time goes (no profiler); RLlib keeps each timer as a moving average dominated by
the first iterations, so this bench has RLlib sum them (:func:`sum_timers`).

The layouts this script once compared (PPO on BabyAI-Text in nine layouts, APPO's layouts on
BabyAI-Text and NetHack-Text) are in ``bench/results/runner_layouts.md``, with the commit of
the script that made them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
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


#: RLlib's per-iteration timers of PPO, under the result's ``timers``.
TIMERS = {
    "sampling": "env_runner_sampling_timer",
    "learner update": "learner_update_timer",
    "weight sync": "synch_weights",
}
#: APPO's (RLlib 2.60, new API stack, the learner in the algorithm's process): the main
#: loop's timers under ``timers`` (``ray.rllib.algorithms.impala.impala.IMPALA.training_step``:
#: SAMPLE_TIMER, LEARNER_UPDATE_TIMER, SYNCH_WORKER_WEIGHTS_TIMER), and its learner thread's
#: under ``learners/__all_modules__`` (``impala_learner``: LEARNER_THREAD_UPDATE_TIMER,
#: LEARNER_THREAD_IN_QUEUE_WAIT_TIMER).
APPO_TIMERS = {
    "sampling": "sample",
    "learner update": "learner_update_timer",
    "weight sync": "synch_weights",
}
LEARNER_THREAD_TIMERS = {
    "learner thread update": "learner_thread_update_timer",
    "learner thread waiting": "learner_thread_in_queue_wait_timer",
}
#: The env runners' own (under ``env_runners``): time inside ``sample()``, between calls,
#: pulling APPO's weights from the env-runner state server (at the start of a call), and,
#: inside ``sample()``, the policy's forward pass and the vector env's step and reset (the rest
#: of ``sample()`` is the connectors and the episode bookkeeping).
RUNNER_TIMERS = (
    "sample",
    "time_between_sampling",
    "env_runner_state_server_pull",
    "rlmodule_inference_timer",
    "env_step_timer",
    "env_reset_timer",
)
#: What the tables show of them, in order (NaN where RLlib reported none).
TIMER_COLUMNS = (
    "sampling",
    "learner update",
    "weight sync",
    *LEARNER_THREAD_TIMERS,
    "env runners sampling share",
)


def sum_timers(algo, main: dict[str, str], learner: dict[str, str]) -> None:
    """Has RLlib sum each timer: per iteration for the main loop's (``timers``), over its
    lifetime for the learner's and the env runners' (sent up and added at each report).

    RLlib creates a timer's statistic on first use and keeps it, so one logged ahead (a
    no-op's time, some microseconds) sets how it reduces; its default is a moving average
    kept across iterations (coefficient 0.01), which the first iterations dominate. Call
    before the first iteration; the learner thread's timer, already waiting, is replaced."""
    from ray.rllib.utils.metrics import ALL_MODULES, ENV_RUNNER_RESULTS, LEARNER_RESULTS

    def ahead(metrics, key: tuple[str, ...], reduce: str) -> None:
        metrics.delete(*key, key_error=False)
        with metrics.log_time(key, reduce=reduce):
            pass

    for key in main.values():
        ahead(algo.metrics, ("timers", key), "sum")
    for key in learner.values():
        algo.metrics.delete(LEARNER_RESULTS, ALL_MODULES, key, key_error=False)
    for key in RUNNER_TIMERS:
        algo.metrics.delete(ENV_RUNNER_RESULTS, key, key_error=False)
    if learner:
        keys = list(learner.values())
        algo.learner_group.foreach_learner(
            lambda lrn: [ahead(lrn.metrics, (ALL_MODULES, k), "lifetime_sum") for k in keys]
        )

    def runner_sums(runner, keys=RUNNER_TIMERS) -> None:
        for k in keys:
            runner.metrics.delete(k, key_error=False)
            runner.metrics.log_value(k, 0.0, reduce="lifetime_sum")

    algo.env_runner_group.foreach_env_runner(runner_sums, local_env_runner=True)


def _get(result: dict, *path: str) -> float:
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return math.nan
        result = result[key]
    try:
        return float(result)
    except (TypeError, ValueError):
        return math.nan


def timed_run(
    config, iterations: int, main: dict[str, str], learner: dict[str, str] | None = None
) -> dict:
    """Builds ``config``, trains one warm-up iteration, then times ``iterations`` more: env
    steps sampled, wall time, and RLlib's timers in seconds per timed iteration (NaN where it
    reported none)."""
    learner = learner or {}
    algo = config.build_algo()
    try:
        sum_timers(algo, main, learner)
        first = algo.train()
        processes = cpu_processes(algo)
        cpu_before = cpu_seconds(processes)
        results, t0 = [], time.perf_counter()
        for _ in range(iterations):
            results.append(algo.train())
        elapsed = time.perf_counter() - t0
        cpu = {k: v - cpu_before[k] for k, v in cpu_seconds(processes).items()}
    finally:
        algo.stop()
    last = results[-1]

    def per_iteration(key: str) -> float:  # the main loop's: summed per iteration
        values = [_get(r, "timers", key) for r in results]
        seen = [v for v in values if not math.isnan(v)]
        return sum(seen) / iterations if seen else math.nan

    def lifetime(*path: str) -> float:  # summed over the lifetime: the timed part's share
        before = _get(first, *path)
        return _get(last, *path) - (0.0 if math.isnan(before) else before)

    timers = dict.fromkeys(TIMER_COLUMNS, math.nan)  # NaN: RLlib has no such timer here
    timers |= {name: per_iteration(key) for name, key in main.items()}
    timers |= {
        name: lifetime("learners", "__all_modules__", key) / iterations
        for name, key in learner.items()
    }
    runner = {k: lifetime("env_runners", k) for k in RUNNER_TIMERS}
    busy = runner["sample"] + runner["time_between_sampling"]
    busy += (
        0.0
        if math.isnan(runner["env_runner_state_server_pull"])
        else (runner["env_runner_state_server_pull"])
    )
    timers["env runners sampling share"] = runner["sample"] / busy if busy > 0 else math.nan
    steps = last["num_env_steps_sampled_lifetime"] - first["num_env_steps_sampled_lifetime"]
    # Samples the learner trained on (an epoch over a batch trains on each once): PPO's epochs,
    # APPO's epochs times the batches it took from its circular buffer (each up to K times).
    trained = lifetime("learners", "__all_modules__", "num_module_steps_trained_lifetime")
    calls = [_get(r, "num_training_step_calls_per_iteration") for r in results]
    return {
        "env_steps_per_s": steps / elapsed,
        "env_steps_timed": steps,
        "wall_s": elapsed,
        "iterations": iterations,
        "iteration_s": elapsed / iterations,
        "timers_s": timers,
        "env_runner_timers_s": runner,
        "samples_trained": trained,
        "samples_trained_per_env_step": trained / steps,
        "cpu_s": cpu,
        "training_step_calls_per_iteration": statistics.mean(calls),
    }


def cpu_processes(algo) -> dict[str, list]:
    """The processes whose CPU time a run counts: the driver (main loop, local learner and
    its thread, a local env runner) and the remote env runners."""
    import psutil

    pids = algo.env_runner_group.foreach_env_runner(lambda _: os.getpid(), local_env_runner=False)
    return {"driver": [psutil.Process()], "env runners": [psutil.Process(p) for p in pids]}


def cpu_seconds(processes: dict[str, list]) -> dict[str, float]:
    """User plus system CPU seconds so far, summed per group of processes. CPU time barely
    depends on what else runs, so it says where a run's work goes even on a busy machine."""
    return {
        group: sum(p.cpu_times().user + p.cpu_times().system for p in members)
        for group, members in processes.items()
    }


def network(task) -> str:
    """The task's policy network, as a table names it."""
    if task.model.network == "mlp":
        return f"MLP {task.model.fcnet_hiddens}"
    return f"{task.model.network} network"


#: Each family's task for PPO against APPO (tune_configs/<name>.yaml).
TASKS = {
    "babyai": "babyai-gotolocal-redball-s20",
    "crafter": "crafter-text",
    "nethack": "nethack-score",
}
ALGORITHMS = ("ppo", "appo")


def timed_variant(task, algorithm: str, iterations: int) -> tuple[dict, str]:
    """``task`` built by the ``ppo`` method on ``algorithm`` (evaluation off), timed by
    :func:`timed_run`; the run and its layout in words."""
    from rl_bk.experiments.ppo_config import learner_threads
    from rl_bk.methods.registry import get_method

    config = get_method("ppo").build(task.model_copy(update={"algorithm": algorithm}), 0, {})
    config.evaluation(evaluation_interval=None)
    appo = algorithm == "appo"
    run = timed_run(
        config, iterations, APPO_TIMERS if appo else TIMERS, LEARNER_THREAD_TIMERS if appo else None
    )
    layout = (
        f"{config.num_env_runners} runner(s) x {config.num_envs_per_env_runner} envs, "
        f"batch {config.train_batch_size_per_learner}, {config.num_epochs} epoch(s), "
        f"{network(task)}, learner on "
        f"{learner_threads(config, task.learner.threads)} thread(s)"
    )
    if appo:
        layout += (
            f", fragment {config.rollout_fragment_length}, buffer "
            f"{config.circular_buffer_num_batches} x "
            f"{config.circular_buffer_iterations_per_batch} passes, broadcast every "
            f"{config.broadcast_interval}, main loop waits "
            f"{config.timeout_s_sampler_manager:g} s, "
            f"{config.max_requests_in_flight_per_env_runner} sample request(s) in flight "
            f"per runner"
        )
    return run, layout


def ppo_vs_appo(
    families: list[str], iterations: int, rounds: int, scale: float, pairs: int
) -> dict[str, dict]:
    """For each family: its raw captioned rate, then ``rounds`` rounds of its task on PPO and
    on APPO, each a fresh build timed by :func:`timed_run` (PPO first in even rounds, APPO
    first in odd ones); rates pooled over the rounds."""
    import ray

    from rl_bk.experiments.task_config import load_task

    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    out: dict[str, dict] = {}
    try:
        for family in families:
            task = load_task(TASKS[family])
            try:
                raw = raw_throughput(task.env, int(ROUND_STEPS[family] * scale), pairs)
            except env_registry.MissingDependencyError as err:
                print(f"skip {family}: {err}")
                continue
            raw_rate = raw["steps_per_s_captioned"]
            runs: dict[str, list[dict]] = {a: [] for a in ALGORITHMS}
            layout = {}
            for i in range(rounds):
                for algorithm in ALGORITHMS if i % 2 == 0 else ALGORITHMS[::-1]:
                    run, layout[algorithm] = timed_variant(task, algorithm, iterations)
                    run["round"] = i
                    runs[algorithm].append(run)
                    print(
                        f"{task.name} {algorithm.upper()} round {i}: "
                        f"{run['env_steps_per_s']:.0f} env steps/s "
                        f"= {run['env_steps_per_s'] / raw_rate:.2f} x raw captioned "
                        f"({raw_rate:.0f} steps/s, same run)"
                    )
            pooled = {a: pool(runs[a]) for a in ALGORITHMS}
            for algorithm, r in pooled.items():
                r["layout"] = layout[algorithm]
                r["over_raw"] = r["env_steps_per_s"] / raw_rate
            out[family] = {
                "task": task.name,
                "env": task.env,
                "raw_captioned_steps_per_s_same_run": raw_rate,
                "raw": raw,
                **pooled,
                "appo_over_ppo": pooled["appo"]["env_steps_per_s"]
                / pooled["ppo"]["env_steps_per_s"],
                "appo_over_ppo_per_round": [
                    a["env_steps_per_s"] / p["env_steps_per_s"]
                    for p, a in zip(runs["ppo"], runs["appo"])
                ],
                "runs": runs,
            }
    finally:
        ray.shutdown()
    return out


def pool(runs: list[dict]) -> dict:
    """Rounds of one algorithm together: env steps over wall time, timers per iteration."""
    iterations = sum(r["iterations"] for r in runs)
    timers = {}
    for name in TIMER_COLUMNS:
        if name == "env runners sampling share":
            timers[name] = statistics.mean(r["timers_s"].get(name, math.nan) for r in runs)
        else:
            timers[name] = (
                sum(r["timers_s"].get(name, math.nan) * r["iterations"] for r in runs) / iterations
            )
    steps, wall = sum(r["env_steps_timed"] for r in runs), sum(r["wall_s"] for r in runs)
    trained = sum(r["samples_trained"] for r in runs)
    calls = sum(r["training_step_calls_per_iteration"] * r["iterations"] for r in runs)
    cpu = {
        group: 1e3 * sum(r.get("cpu_s", {}).get(group, math.nan) for r in runs) / steps
        for group in ("driver", "env runners")
    }
    return {
        "env_steps_per_s": steps / wall,
        "env_steps_timed": steps,
        "wall_s": wall,
        "iteration_s": wall / iterations,
        "rounds": len(runs),
        "timers_s": timers,
        "samples_trained_per_env_step": trained / steps,
        "cpu_ms_per_env_step": cpu,
        "training_step_calls_per_iteration": calls / iterations,
    }


def _s(value: float, digits: int = 3) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}f}"


APPO_HEADING = "## PPO against APPO in each family's task layout"


def appo_section(
    results: dict[str, dict], meta: dict, iterations: int, rounds: int, pairs: int
) -> list[str]:
    """The markdown section of :func:`ppo_vs_appo`'s results."""
    order = (
        "PPO first"
        if rounds == 1
        else f"{rounds} rounds of each, PPO first in the 1st and APPO first in the 2nd"
        + (" and so on" if rounds > 2 else "")
    )
    lines = [
        APPO_HEADING,
        "",
        f"Command: `{meta['command']}` — {meta['date']}, {meta['machine']}, "
        f"load average at end {meta['load_average_at_end'][0]:.1f}.",
        "",
        f"Each task as its file sets it, built by the `ppo` method with `algorithm: ppo` and "
        f"with `algorithm: appo`, evaluation off: {order}, each a fresh build, one warm-up "
        f"iteration, then {iterations} timed; env steps sampled over the wall time of the timed "
        f"iterations, pooled over the rounds. Raw captioned: the family's env in one process "
        f"with random actions, median of {pairs} rounds, measured just before its PPO and "
        f"APPO rounds.",
        "",
        "| task | algorithm | layout | env steps/s | / raw captioned | APPO / PPO | "
        "samples trained per env step | s per iteration | main-loop calls per iteration | "
        "sampling | learner update | weight sync | learner thread: update | "
        "learner thread: waiting for a batch | env runners: share of time in sample() |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for f in results.values():
        for algorithm in ALGORITHMS:
            r, t = f[algorithm], f[algorithm]["timers_s"]
            ratio = f"{f['appo_over_ppo']:.2f}" if algorithm == "appo" else ""
            lines.append(
                f"| {f['task']} ({f['raw_captioned_steps_per_s_same_run']:.0f} raw captioned "
                f"steps/s) | {algorithm.upper()} | {r['layout']} | {r['env_steps_per_s']:.0f} | "
                f"{r['over_raw']:.2f} | {ratio} | {_s(r['samples_trained_per_env_step'], 2)} | "
                f"{r['iteration_s']:.3f} | {_s(r['training_step_calls_per_iteration'], 0)} | "
                + " | ".join(_s(t.get(name, math.nan)) for name in TIMER_COLUMNS[:-1])
                + f" | {_s(t.get('env runners sampling share', math.nan), 2)} |"
            )
    lines += [
        "",
        "An iteration samples one train batch of env steps under both (APPO: "
        "`min_sample_timesteps_per_iteration` = the batch). Samples trained per env step: "
        "the learner's `learners/__all_modules__/num_module_steps_trained_lifetime` over the "
        "env steps sampled, in the timed iterations: PPO's epochs, APPO's epochs times the "
        "times its learner trained on a batch from its circular buffer (up to "
        "`circular_buffer_iterations_per_batch`; the oldest batch is dropped when it is "
        "full), so the two do different amounts of gradient work per env step; a little more "
        "than that, as RLlib's learner connector adds one artificial timestep to each episode "
        "piece. Main-loop calls: RLlib's `num_training_step_calls_per_iteration`; PPO's loop "
        "runs once per iteration, APPO's again and again until the batch's env steps have "
        "come in (each call waits up to `appo.timeout_s_sampler_manager` for the runners' "
        "samples; RLlib's default, 0, polls without pause). The timers are RLlib's own (no "
        "profiler), in seconds per timed iteration, each summed by RLlib (this bench sets "
        "that; RLlib's default moving average is dominated by the first iterations):",
        "- sampling: PPO `timers/env_runner_sampling_timer`, the env runners sampling the "
        "batch while the learner waits; APPO `timers/sample`, the main loop collecting the "
        "`sample()` results the runners have finished, summed over its calls (with the "
        "time it waited for them).",
        "- learner update: `timers/learner_update_timer`; PPO the whole synchronous update "
        "(epochs x minibatches); APPO the main loop handing batches to the learner thread: "
        "the episodes from the object store, the learner connector pipeline, the put into the "
        "learner's circular buffer (never blocks), then waiting until the thread finishes an "
        "update (RLlib 2.60 waits after every hand-off at `broadcast_interval` 1).",
        "- weight sync: `timers/synch_weights`; PPO sends the weights to the env runners, APPO "
        "pushes them to the env-runner state server, from which the runners pull.",
        "- learner thread (APPO alone; `learners/__all_modules__/learner_thread_update_timer` "
        "and `.../learner_thread_in_queue_wait_timer`): APPO's learner updating in its "
        "background thread, and idle waiting for a batch, which it does only while its "
        "circular buffer is empty (large: sampling bounds the learner; near zero: the "
        "learner always has a batch). The rest of the thread's time is its bookkeeping "
        "after each update (its weights put in the object store, its metrics), which RLlib "
        "does not time.",
        "- env runners: their share of time inside `sample()` (`env_runners/sample`) against "
        "the gaps between calls (`env_runners/time_between_sampling`; under PPO, the learner's "
        "update) and APPO's weight pulls (`env_runners/env_runner_state_server_pull`).",
        "- –: RLlib reported no such timer (PPO has no learner thread).",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument(
        "--families",
        default=",".join(ENVS),
        help=f"comma-separated, of {', '.join(ENVS)} (default: all)",
    )
    p.add_argument(
        "--appo-only",
        action="store_true",
        help="only PPO against APPO: rewrites that section of the results and leaves the rest",
    )
    p.add_argument(
        "--iterations",
        type=int,
        metavar="N",
        help="timed iterations per round (default 10; --quick 3): more for steadier "
        "rates of fast tasks, whose iterations take a fraction of a second",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    unknown = sorted(set(families) - set(ENVS))
    if unknown or not families:
        p.error(f"unknown families {unknown}; known: {', '.join(ENVS)}")
    families = [f for f in ENVS if f in families]
    scale, pairs, iters = (0.5, 6, 3) if args.quick else (1.0, 30, 10)
    iters = args.iterations or iters
    rounds = 1 if args.quick else 2

    command = (
        "python -m bench.env_throughput"
        + (" --quick" if args.quick else "")
        + (f" --iterations {args.iterations}" if args.iterations else "")
        + (" --appo-only" if args.appo_only else "")
        + (f" --families {','.join(families)}" if families != list(ENVS) else "")
    )
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}"
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / "env_throughput.json", args.out / "env_throughput.md"
    from bench.results_files import replace_section, write_keeping_reading

    def appo_part() -> tuple[dict, list[str]]:
        appo = ppo_vs_appo(families, iters, rounds, scale, pairs)
        for f in appo.values():
            print(
                f"{f['task']}: APPO / PPO {f['appo_over_ppo']:.2f}; PPO "
                f"{f['ppo']['over_raw']:.2f} x raw captioned, APPO "
                f"{f['appo']['over_raw']:.2f} x ({f['raw_captioned_steps_per_s_same_run']:.0f}"
                f" steps/s, same run)"
            )
        meta = {
            "command": command,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": machine,
            "load_average_at_end": os.getloadavg(),
            "iterations": iters,
            "rounds": rounds,
            "raw_pairs": pairs,
        }
        return {"meta": meta, **appo}, appo_section(appo, meta, iters, rounds, pairs)

    if args.appo_only:
        appo, section = appo_part()
        old = {}
        if json_path.is_file():
            try:
                old = json.loads(json_path.read_text())
            except json.JSONDecodeError:
                old = {}
        json_path.write_text(json.dumps({**old, "ppo_vs_appo": appo}, indent=2))
        replace_section(md_path, APPO_HEADING, section)
        print(f"wrote {md_path}")
        return 0

    results: dict[str, dict] = {}
    for family in families:
        name = ENVS[family]
        try:
            steps = int(ROUND_STEPS[family] * scale)
            results[family] = {"env": name, **raw_throughput(name, steps, pairs)}
        except env_registry.MissingDependencyError as err:
            print(f"skip {family}: {err}")
            continue
        r = results[family]
        print(
            f"{name:40s} raw {r['steps_per_s_uncaptioned']:8.0f} steps/s, captioned "
            f"{r['steps_per_s_captioned']:8.0f}: captions take "
            f"{100 * r['caption_share_of_step_time']:.1f}% of step time"
        )

    appo, section = appo_part()
    results["ppo_vs_appo"] = appo

    meta = {
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": machine,
        "load_average_at_end": os.getloadavg(),
    }
    json_path.write_text(json.dumps({"meta": meta, **results}, indent=2))
    lines = [
        "# Env throughput",
        "",
        f"Command: `{command}` — {meta['date']}, {meta['machine']}, "
        f"load average at end {meta['load_average_at_end'][0]:.1f}.",
        "",
        "| env | raw steps/s (no caption) | captioned steps/s | caption share of step time "
        f"(CPU time, median of {pairs} pairs) |",
        "|---|---|---|---|",
    ]
    for family in ENVS:
        if family in results:
            r = results[family]
            lines.append(
                f"| {r['env']} | {r['steps_per_s_uncaptioned']:.0f} | "
                f"{r['steps_per_s_captioned']:.0f} | "
                f"{100 * r['caption_share_of_step_time']:.1f}% |"
            )
    lines += ["", *section]
    write_keeping_reading(md_path, "\n".join(lines) + "\n")
    print(f"wrote {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
