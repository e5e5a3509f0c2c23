"""rl-bk's throughput against the trainers a researcher would otherwise pick, side by side in
one run on this machine: sample-factory's APPO on NetHack, CleanRL's ppo.py on BabyAI.

    bash bench/peers/setup.sh            # the peers' own environments (never rl-bk's)
    python -m bench.peer_throughput      # writes bench/results/peer_throughput.{md,json}
    python -m bench.peer_throughput --quick --only babyai

Both trainers step the same env code (rl-bk's captioned envs, imported from
``env_registry``), with the same network, env count, batch and epochs, taken from the task file;
evaluation off in both. Rounds alternate which trainer goes first; each run leaves out its
start-up (rl-bk: the first iteration; sample-factory: up to its second throughput report;
CleanRL: its first iteration). CPU time per env step is split into the env's step and reset,
the policy's forward pass, the sampler's other work (connectors, episode bookkeeping, vector
env), and learning (with the main loop). What each trainer does differently per step is in the
results file's notes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import env_registry
from bench.env_throughput import ROUND_STEPS, network, raw_throughput, timed_variant
from bench.results_files import code_and_machine, write_keeping_reading

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "bench" / "peers" / ".venvs"
SF_PYTHON = PEERS / "sample-factory" / "bin" / "python"
CLEANRL_PYTHON = PEERS / "cleanrl" / "bin" / "python"
#: CleanRL's ppo.py at this commit of vwxyzjn/cleanrl (bench/peers/setup.sh downloads it).
CLEANRL_COMMIT = "e421c2e50b81febf639fced51a69e2602593d50d"
CLEANRL_PPO = PEERS / f"cleanrl-ppo-{CLEANRL_COMMIT[:8]}.py"
NETHACK_TASK = "nethack-score-appo"
BABYAI_TASK = "babyai-gotolocal-redball-s20"
SPLIT = ("env", "policy forward", "sampler's other work", "learning and main loop")


def peer_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def rlbk_run(task, algorithm: str, iterations: int) -> dict:
    """``task`` on rl-bk (the ``ppo`` method, evaluation off), timed by env_throughput's
    :func:`timed_variant`; CPU ms per env step split by RLlib's own runner timers."""
    run, layout = timed_variant(task, algorithm, iterations)
    steps = run["env_steps_timed"]
    timers = run["env_runner_timers_s"]
    env = timers["env_step_timer"] + timers["env_reset_timer"]
    forward = timers["rlmodule_inference_timer"]
    split = {
        "env": env,
        "policy forward": forward,
        "sampler's other work": timers["sample"] - env - forward,
        "learning and main loop": run["cpu_s"]["driver"],
    }
    if task.env_runners.num_env_runners == 0:  # the sampler is in the driver: count it once
        split["learning and main loop"] -= timers["sample"]
    return {
        "trainer": "rl-bk",
        "layout": layout,
        "env_steps_per_s": run["env_steps_per_s"],
        "env_steps_timed": steps,
        "cpu_ms_per_env_step": {k: 1e3 * v / steps for k, v in split.items()},
        "cpu_ms_per_env_step_total": 1e3 * sum(run["cpu_s"].values()) / steps,
        # APPO's learner trains each batch at most K times and fewer when sampling outruns
        # it, so its CPU per env step moves with this as well as with the cost of one update.
        "samples_trained_per_env_step": run["samples_trained_per_env_step"],
    }


def sample_factory_run(task, steps: int) -> dict:
    """sample-factory's APPO on the task's env, network, env count, fragment and batch."""
    r, ppo = task.env_runners, task.ppo
    fragment = ppo.train_batch_size_per_learner // (
        max(1, r.num_env_runners) * r.num_envs_per_env_runner
    )
    flags = {
        "algo": "APPO",
        "env": "nethack_text_score",
        "device": "cpu",
        "num_workers": max(1, r.num_env_runners),
        "num_envs_per_worker": r.num_envs_per_env_runner,
        "rollout": fragment,
        "batch_size": ppo.train_batch_size_per_learner,
        "num_batches_per_epoch": 1,
        "num_epochs": task.appo.num_epochs,
        "nonlinearity": task.model.fcnet_activation,
        "actor_critic_share_weights": task.model.vf_share_layers,
        "use_rnn": False,
        "normalize_input": False,
        "learning_rate": ppo.lr,
        "gamma": ppo.gamma,
        "ppo_clip_ratio": ppo.clip_param,
        "exploration_loss_coeff": ppo.entropy_coeff,
        "value_loss_coeff": ppo.vf_loss_coeff,
        "max_grad_norm": ppo.grad_clip or 0.0,
        "train_for_env_steps": steps,
        "with_wandb": False,
        "save_every_sec": 10**6,
        "experiment_summaries_interval": 10**6,
        "decorrelate_envs_on_one_worker": False,
    }
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        argv = [f"--{k}={v}" for k, v in flags.items()]
        argv += ["--encoder_mlp_layers", *map(str, task.model.fcnet_hiddens)]
        argv += [f"--train_dir={tmp}", "--experiment=sf"]
        subprocess.run(
            [str(SF_PYTHON), "-m", "bench.peers.sample_factory_nethack", str(out), *argv],
            cwd=ROOT,
            env={**peer_env(), "PEER_ROLES_DIR": str(Path(tmp) / "roles")},
            check=True,
            capture_output=True,
        )
        result = json.loads(out.read_text())
    reports = [(t, f) for t, f in result["reports"] if f > 0]
    (t0, f0), (t1, f1) = reports[1], reports[-1]  # from the second report: start-up left out
    frames = reports[-1][1]
    by_role: dict[str, float] = {}
    for pid, seconds in result["cpu_s"].items():
        role = result["roles"].get(pid, "main")
        by_role[role] = by_role.get(role, 0.0) + seconds
    split = {
        "env": by_role.get("env", 0.0),  # its rollout workers: the env and the sampler's work
        "policy forward": by_role.get("inference", 0.0),
        "sampler's other work": math.nan,  # inside the rollout workers' time
        "learning and main loop": by_role.get("learner", 0.0) + by_role.get("main", 0.0),
    }
    layout = (
        f"{flags['num_workers']} rollout worker(s) x {flags['num_envs_per_worker']} envs, "
        f"batch {flags['batch_size']}, {flags['num_epochs']} epoch(s), "
        f"MLP {task.model.fcnet_hiddens} {flags['nonlinearity']}, rollout {fragment}"
    )
    return {
        "trainer": "sample-factory 2.1.1",
        "layout": layout,
        "env_steps_per_s": (f1 - f0) / (t1 - t0),
        "env_steps_timed": f1 - f0,
        # The whole run's CPU (start-up included) over its env steps.
        "cpu_ms_per_env_step": {k: 1e3 * v / frames for k, v in split.items()},
        "cpu_ms_per_env_step_total": 1e3 * sum(by_role.values()) / frames,
    }


def cleanrl_run(task, hidden: int, iterations: int) -> dict:
    """CleanRL's ppo.py (width ``hidden``) with the task's env count, batch, minibatches,
    epochs and PPO settings."""
    r, ppo = task.env_runners, task.ppo
    envs = max(1, r.num_env_runners) * r.num_envs_per_env_runner
    steps_per_env = ppo.train_batch_size_per_learner // envs
    flags = [
        "--env-id",
        task.env,
        "--num-envs",
        str(envs),
        "--num-steps",
        str(steps_per_env),
        "--total-timesteps",
        str(envs * steps_per_env * (iterations + 1)),
        "--num-minibatches",
        str(ppo.train_batch_size_per_learner // ppo.minibatch_size),
        "--update-epochs",
        str(ppo.num_epochs),
        "--learning-rate",
        str(ppo.lr),
        "--gamma",
        str(ppo.gamma),
        "--gae-lambda",
        str(ppo.lambda_),
        "--clip-coef",
        str(ppo.clip_param),
        "--ent-coef",
        str(ppo.entropy_coeff),
        "--vf-coef",
        str(ppo.vf_loss_coeff),
        "--no-anneal-lr",
        "--no-cuda",
        "--seed",
        "0",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        subprocess.run(
            [
                *(str(CLEANRL_PYTHON), "-m", "bench.peers.cleanrl_babyai"),
                *(str(CLEANRL_PPO), str(out), "--hidden", str(hidden), "--", *flags),
            ],
            cwd=tmp,  # ppo.py writes its TensorBoard runs/ here
            env=peer_env(),
            check=True,
            capture_output=True,
        )
        result = json.loads(out.read_text())
    steps, cpu = result["env_steps_timed"], result["cpu_s"]
    split = {
        "env": cpu["env"],
        "policy forward": math.nan,  # inside the rollout's other work below
        "sampler's other work": cpu[
            "rollout besides the env (policy forward, vector env, ppo.py's loop)"
        ],
        "learning and main loop": cpu["update"],
    }
    return {
        "trainer": f"CleanRL ppo.py @{CLEANRL_COMMIT[:8]}",
        "layout": (
            f"1 process x {envs} envs (gymnasium SyncVectorEnv), batch "
            f"{ppo.train_batch_size_per_learner}, {ppo.num_epochs} epochs, MLP "
            f"[{hidden}, {hidden}] tanh"
        ),
        "env_steps_per_s": result["env_steps_per_s"],
        "env_steps_timed": steps,
        "cpu_ms_per_env_step": {k: 1e3 * v / steps for k, v in split.items()},
        "cpu_ms_per_env_step_total": 1e3 * sum(v for v in cpu.values()) / steps,
    }


def raw_run(env: str, steps: int, pairs: int) -> dict:
    """The env's raw captioned rate now (one env stepped alone), as a side-by-side run."""
    rate = raw_throughput(env, steps, pairs)["steps_per_s_captioned"]
    return {"trainer": "raw env", "env_steps_per_s": rate}


def side_by_side(name: str, runs: dict, rounds: int) -> dict:
    """``runs``: trainer -> callable; ``rounds`` rounds, alternating which goes first."""
    order = list(runs)
    out: dict[str, list[dict]] = {k: [] for k in order}
    for i in range(rounds):
        for trainer in order if i % 2 == 0 else order[::-1]:
            run = runs[trainer]()
            run["round"] = i
            out[trainer].append(run)
            print(f"{name} round {i}: {run['trainer']}: {run['env_steps_per_s']:.0f} env steps/s")
    return out


def pooled(runs: list[dict]) -> dict:
    steps = sum(r["env_steps_timed"] for r in runs)
    wall = sum(r["env_steps_timed"] / r["env_steps_per_s"] for r in runs)

    def mean(key: str) -> float:
        return sum(r["cpu_ms_per_env_step"][key] * r["env_steps_timed"] for r in runs) / steps

    pooled_run = {
        "trainer": runs[0]["trainer"],
        "layout": runs[0]["layout"],
        "env_steps_per_s": steps / wall,
        "cpu_ms_per_env_step": {k: mean(k) for k in SPLIT},
        "cpu_ms_per_env_step_total": sum(
            r["cpu_ms_per_env_step_total"] * r["env_steps_timed"] for r in runs
        )
        / steps,
        "per_round": [r["env_steps_per_s"] for r in runs],
    }
    if all("samples_trained_per_env_step" in r for r in runs):  # rl-bk's runs alone
        pooled_run["samples_trained_per_env_step"] = (
            sum(r["samples_trained_per_env_step"] * r["env_steps_timed"] for r in runs) / steps
        )
    return pooled_run


def nethack_variants(
    layouts: str, in_flight: str, passes: str = "task"
) -> dict[str, dict[str, dict[str, int]]]:
    """Each NetHack comparison's name and its changes to the task file's sections, for every
    layout (``task`` or ``RxE``: the same env runners x envs for both trainers) with every
    in-flight setting (``task`` or a number of sample requests rl-bk keeps in flight per
    runner; sample-factory's rollout workers never wait for one) and every number of passes
    over each batch (``task`` or rl-bk's ``appo.circular_buffer_iterations_per_batch``;
    sample-factory's stays at one, its own): the last two change rl-bk alone."""
    variants = {}
    grid = itertools.product(layouts.split(","), in_flight.split(","), passes.split(","))
    for layout, requests, times in grid:
        name, runners, appo = "nethack", {}, {}
        if layout != "task":
            r, e = map(int, layout.split("x"))
            runners |= {"num_env_runners": r, "num_envs_per_env_runner": e}
            name += f"-{layout}"
        if requests != "task":
            runners["max_requests_in_flight_per_env_runner"] = int(requests)
            name += f"-in-flight{requests}"
        if times != "task":
            appo["circular_buffer_iterations_per_batch"] = int(times)
            name += f"-passes{times}"
        variants[name] = {k: v for k, v in (("env_runners", runners), ("appo", appo)) if v}
    return variants


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="fewer iterations, one round")
    p.add_argument("--only", choices=["nethack", "babyai"])
    p.add_argument(
        "--nethack-layouts",
        default="task",
        help="comma-separated: 'task' (the task file's) or RxE (R env runners / sample-factory "
        "rollout workers of E envs each), e.g. task,1x16,2x8",
    )
    p.add_argument(
        "--nethack-in-flight",
        default="task",
        help="comma-separated: 'task' (the task file's) or how many sample requests rl-bk keeps "
        "in flight per env runner, e.g. task,2; each with every layout",
    )
    p.add_argument(
        "--nethack-passes",
        default="task",
        help="comma-separated: 'task' (the task file's) or how many times rl-bk's APPO trains on "
        "each batch (sample-factory: once), e.g. task,1; each with every layout",
    )
    p.add_argument(
        "--babyai-learner-threads",
        default="task",
        help="comma-separated: 'task' (the task file's) or a number of rl-bk learner threads",
    )
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "peer_throughput"))
    args = p.parse_args(argv)
    ran_at = code_and_machine(ROOT)  # before the run: commits made meanwhile are not its code
    for path in (SF_PYTHON, CLEANRL_PYTHON, CLEANRL_PPO):
        if not path.exists():
            sys.exit(f"{path} is missing: run `bash bench/peers/setup.sh` first")
    import ray

    from rl_bk.experiments.task_config import load_task

    rounds = 1 if args.quick else args.rounds
    scale = 0.25 if args.quick else 1.0
    ray.init(
        address="local", num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR"
    )
    env_registry.register_all()
    results: dict[str, dict] = {}
    try:
        if args.only in (None, "nethack"):
            base = load_task(NETHACK_TASK)
            pairs = 4 if args.quick else 10
            iterations = int(150 * scale)
            steps = iterations * base.ppo.train_batch_size_per_learner
            variants = nethack_variants(
                args.nethack_layouts, args.nethack_in_flight, args.nethack_passes
            )
            for name, sections in variants.items():
                task = base.model_copy(
                    update={s: getattr(base, s).model_copy(update=f) for s, f in sections.items()}
                )
                # The raw rate is measured in every round, between the trainers, so that
                # it shares their moment: this host's speed drifts by tens of percent within
                # an hour.
                runs = side_by_side(
                    name,
                    {
                        "rl-bk": lambda task=task: rlbk_run(task, "appo", iterations),
                        "raw": lambda: raw_run(base.env, ROUND_STEPS["nethack"], pairs),
                        "sample-factory": lambda task=task: sample_factory_run(
                            task, steps + 40_000
                        ),
                    },
                    rounds,
                )
                raws = runs.pop("raw")
                results[name] = {
                    "task": task.name,
                    "network": network(task),
                    "raw": {
                        "steps_per_s_captioned": statistics.median(
                            r["env_steps_per_s"] for r in raws
                        ),
                        "per_round": [r["env_steps_per_s"] for r in raws],
                    },
                    "runs": runs,
                    "pooled": {k: pooled(v) for k, v in runs.items()},
                }
        if args.only in (None, "babyai"):
            base = load_task(BABYAI_TASK)
            iterations = int(60 * scale)
            for threads in args.babyai_learner_threads.split(","):
                for hidden in (64, 256):
                    model = base.model.model_copy(
                        update={"network": "mlp", "fcnet_hiddens": [hidden, hidden]}
                    )
                    task, name = base.model_copy(update={"model": model}), f"babyai-mlp{hidden}"
                    if threads != "task":  # rl-bk's learner threads (CleanRL's stay at one)
                        learner = base.learner.model_copy(update={"threads": int(threads)})
                        task = task.model_copy(update={"learner": learner})
                        name += f"-learner{threads}"
                    runs = side_by_side(
                        name,
                        {
                            "rl-bk": lambda task=task: rlbk_run(task, "ppo", iterations),
                            "cleanrl": lambda task=task, h=hidden: cleanrl_run(task, h, iterations),
                        },
                        rounds,
                    )
                    results[name] = {
                        "task": task.name,
                        "network": network(task),
                        "runs": runs,
                        "pooled": {k: pooled(v) for k, v in runs.items()},
                    }
    finally:
        ray.shutdown()
    meta = {
        "command": "python -m bench.peer_throughput " + " ".join(argv or sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "rounds": rounds,
        **ran_at,
    }
    for result in results.values():
        result["meta"] = meta
    out = Path(args.out)
    if args.only and out.with_suffix(".json").exists():  # keep the other comparisons' rows
        results = {**json.loads(out.with_suffix(".json").read_text()), **results}
    out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    write_keeping_reading(out.with_suffix(".md"), "\n".join(report(results)))
    print(f"wrote {out}.md")
    return 0


def _f(value: float, digits: int = 3) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def report(results: dict) -> list[str]:
    made: dict[tuple[str, str, str], list[str]] = {}  # (date, command, where) -> comparisons
    for name, r in results.items():
        m = r["meta"]
        where = ", ".join(f"{k} {m[k]}" for k in ("commit", "cpu") if m.get(k))
        made.setdefault((m["date"], m["command"].strip(), where), []).append(name)
    meta = next(iter(results.values()))["meta"]
    lines = [
        "# rl-bk's throughput against sample-factory and CleanRL",
        "",
        *(
            f"`{command}` ({date}{'; ' + where if where else ''}): {', '.join(names)}"
            for (date, command, where), names in sorted(made.items(), reverse=True)
        ),
        "",
        f"{meta['machine']}; each run's rounds alternate which trainer goes first; env steps/s "
        "pooled over the rounds; cores busy = CPU seconds per wall second.",
        "",
        "| comparison | trainer | layout | env steps/s | rl-bk / peer | per round | "
        + " | ".join(f"CPU ms / env step: {k}" for k in SPLIT)
        + " | CPU ms / env step: total | cores busy |",
        "|" + "---|" * (8 + len(SPLIT)),
    ]
    for name, result in results.items():
        runs = result["pooled"]
        ours = runs["rl-bk"]["env_steps_per_s"]
        for trainer, r in runs.items():
            ratio = "" if trainer == "rl-bk" else f"{ours / r['env_steps_per_s']:.2f}"
            rounds = ", ".join(f"{v:.0f}" for v in r["per_round"])
            split = " | ".join(_f(r["cpu_ms_per_env_step"][k]) for k in SPLIT)
            lines.append(
                f"| {name} | {r['trainer']} | {r['layout']} | {r['env_steps_per_s']:.0f} | "
                f"{ratio} | {rounds} | {split} | {_f(r['cpu_ms_per_env_step_total'])} | "
                f"{r['cpu_ms_per_env_step_total'] * r['env_steps_per_s'] / 1e3:.2f} |"
            )
    with_raw = {n: r for n, r in results.items() if r.get("raw")}
    if with_raw:
        lines += ["", "NetHack-Text's raw captioned rate (one env stepped alone), each run's:", ""]
        for name, result in with_raw.items():
            raw = result["raw"]["steps_per_s_captioned"]
            ours = result["pooled"]["rl-bk"]["env_steps_per_s"]
            rounds = result["raw"].get("per_round")
            when = (
                f"the median of its rounds' {', '.join(f'{v:.0f}' for v in rounds)}"
                if rounds
                else "measured once, before the trainers"
            )
            lines.append(
                f"- {name}: {raw:.0f} steps/s ({when}); rl-bk's APPO at {ours / raw:.2f} x raw, "
                f"sample-factory at {_peer_rate(result) / raw:.2f} x"
            )
    trained = {
        n: r["pooled"]["rl-bk"]["samples_trained_per_env_step"]
        for n, r in results.items()
        if "samples_trained_per_env_step" in r["pooled"]["rl-bk"]
    }
    if trained:
        lines += [
            "",
            "Samples rl-bk's learner trained on per env step sampled (PPO: its epochs; APPO: the "
            "passes its circular buffer gave each batch, at most the layout's, fewer when "
            "sampling outran the learner), each run's:",
            "",
            *(f"- {name}: {value:.2f}" for name, value in trained.items()),
        ]
    return [*lines, ""]


def _peer_rate(result: dict) -> float:
    return next(r["env_steps_per_s"] for t, r in result["pooled"].items() if t != "rl-bk")


if __name__ == "__main__":
    sys.exit(main())
