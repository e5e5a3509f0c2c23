"""Ray Serve in the training loop, measured side by side in one run.

    python -m bench.serve_in_loop          # writes bench/results/serve_in_loop.{md,json}

1. Round trip of a stored label through the labeler app's deployment handle (one request, 300
   calls, p50/p99), beside Serve's own floor in the same run: a deployment that returns its
   argument, through a handle.
2. Labels per second with 1, 2 and 4 concurrent callers (each a Ray actor, as a trial is,
   sending batches of 4 new requests in a loop for ``--seconds``) against one replica, with
   the replica merging calls (``@serve.batch``, the default 0.02 s window) and without
   (``max_batch_size`` 1). The
   backend is the fake one with a fixed 50 ms per call, whatever its size: a model of an LLM
   that generates a batch in the time of one request (vLLM on a GPU). It is not an LLM.
3. PPO env steps/s with online labels from the labeler app over the same method labelling in
   its own process (the oracle labels both: the cost of the mechanism, not of an LLM):
   ONI-Retrieval on NetHack Score and ELLM on Crafter-Text, one iteration each per round, in
   turn, median ratio within a round (bench/paired_rounds.py).
4. BK-Pref env steps/s with Phi from the reward-model app over the potential in the learner.

Run it on a quiet machine: it measures time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

N_ROUND_TRIPS = 300
CALLERS = (1, 2, 4)
REQUESTS_PER_CALL = 4
FAKE_CALL_S = 0.05


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def round_trips(store: str) -> dict:
    from ray import serve

    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import ensure_labeler_app

    @serve.deployment(name="Echo", ray_actor_options={"num_cpus": 0})
    class Echo:
        def ping(self, x):
            return x

    echo = serve.run(Echo.bind(), name="echo", route_prefix="/echo")
    handle = ensure_labeler_app(
        LabelerAppConfig(backend="oracle", app_name="rtt", store_path=store, num_cpus=0)
    )
    request = [{"caption": "You see a red ball 2 steps forward", "task": "go to the red ball"}]
    handle.label.remote("helpful", request).result()  # stored now
    out = {}
    for name, call in (
        ("serve floor (echo)", lambda: echo.ping.remote(1).result()),
        ("stored label", lambda: handle.label.remote("helpful", request).result()),
    ):
        for _ in range(20):
            call()
        times = []
        for _ in range(N_ROUND_TRIPS):
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        out[name] = {"p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99)}
        print(name, out[name], flush=True)
    serve.delete("echo")
    serve.delete("rtt")
    return out


def labels_per_second(store_dir: str, seconds: float) -> list[dict]:
    import ray
    from ray import serve

    from serve_deployments.configs import LabelerAppConfig
    from serve_deployments.labeler import ensure_labeler_app

    @ray.remote(num_cpus=0)
    class Caller:
        def __init__(self, app: str, index: int):
            self.handle, self.index = serve.get_app_handle(app), index

        def run(self, until: float) -> int:
            n, i = 0, 0
            while time.time() < until:
                batch = [
                    {"caption": f"caller {self.index} caption {i}-{k}", "task": "t"}
                    for k in range(REQUESTS_PER_CALL)
                ]
                n += len(self.handle.label.remote("helpful", batch).result()["labels"])
                i += 1
            return n

    rows = []
    for merging in (True, False):
        app = f"lps-{'merge' if merging else 'single'}"
        ensure_labeler_app(
            LabelerAppConfig(
                backend="fake",
                fake_delay_s=FAKE_CALL_S,
                app_name=app,
                num_cpus=0,
                store_path=f"{store_dir}/{app}.sqlite3",
                max_batch_size=64 if merging else 1,
            )
        )
        for n in CALLERS:
            callers = [Caller.remote(app, i + 100 * n) for i in range(n)]
            ray.get([c.run.remote(0) for c in callers])  # started, handles resolved
            until = time.time() + seconds
            done = sum(ray.get([c.run.remote(until) for c in callers]))
            rows.append({"merging": merging, "callers": n, "labels_per_s": done / seconds})
            print(rows[-1], flush=True)
            for c in callers:
                ray.kill(c)
        serve.delete(app)
    return rows


def paired_throughput(rounds: int, warmup: int) -> dict:
    from rl_bk.experiments.labelers import start_labeler_apps
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    out = {}
    for task_name, method in (("nethack-score", "oni-retrieval"), ("crafter-text-ellm", "ellm")):
        task = load_task(task_name)
        served = task.model_copy(
            update={
                "labeler": task.labeler.model_copy(
                    update={"mode": "serve", "app_name": f"loop-{method}"}
                )
            }
        )
        start_labeler_apps(served, ["oracle"])
        out[method] = paired(
            {
                f"{method} in-process": get_method(method).build(task, 0, {"backend": "oracle"}),
                f"{method} Serve app": get_method(method).build(served, 0, {"backend": "oracle"}),
            },
            rounds,
            warmup,
        )
    return out


def paired(configs: dict, rounds: int, warmup: int) -> list[dict]:
    """Env steps/s ratios of the configs' algorithms to the first one, in paired rounds."""
    from bench.paired_rounds import ratio_rows, train_in_rounds

    algos = {name: config.build_algo() for name, config in configs.items()}
    try:
        rates = train_in_rounds(algos, rounds, warmup)
    finally:
        for a in algos.values():
            a.stop()
    return ratio_rows(rates, next(iter(configs)))


def served_potential(rounds: int, warmup: int) -> list[dict]:
    from rl_bk.experiments.knowledge_pipeline import build_knowledge
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.bk.method import serve_potential
    from rl_bk.methods.registry import get_method

    task = load_task("babyai-gotolocal-redball-s20")
    build_knowledge(task, "bk-pref")
    serve_potential(task, None)
    method = get_method("bk-pref")
    return paired(
        {
            "bk-pref in the learner": method.build(task, 0, {"served": False}),
            "bk-pref from the app": method.build(task, 0, {"served": True}),
        },
        rounds,
        warmup,
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seconds", type=float, default=10.0, help="per labels/s measurement")
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args()

    import ray

    import env_registry
    from bench.paired_rounds import ratio_table, run_facts

    tmp = tempfile.mkdtemp(prefix="serve-in-loop-")
    os.environ["RLBK_LABEL_STORE"] = f"{tmp}/labels.sqlite3"  # no label from earlier runs
    os.environ["RLBK_REWARD_MODELS"] = f"{tmp}/reward_models"
    facts = run_facts("-m bench.serve_in_loop")
    ray.init(address="local", num_cpus=8, include_dashboard=False, logging_level="ERROR")
    env_registry.register_all()
    rtt = round_trips(f"{tmp}/rtt.sqlite3")
    lps = labels_per_second(tmp, args.seconds)
    loop = paired_throughput(args.rounds, args.warmup)
    pref = served_potential(args.rounds, args.warmup)
    facts["load_average_end"] = os.getloadavg()[0]

    base = {r["callers"]: r["labels_per_s"] for r in lps if not r["merging"]}
    lines = [
        "# Ray Serve in the training loop",
        "",
        f"`{facts['command']}` ({facts['date']}, {facts['machine']}, load average at the end "
        f"{facts['load_average_end']:.1f}). Every ratio is measured within one run.",
        "",
        "## Round trip of a stored label through the deployment handle",
        "",
        "| call | p50 ms | p99 ms |",
        "|---|---|---|",
        *[f"| {k} | {v['p50_ms']:.2f} | {v['p99_ms']:.2f} |" for k, v in rtt.items()],
        "",
        f"Stored label / Serve's floor, p50: "
        f"{rtt['stored label']['p50_ms'] / rtt['serve floor (echo)']['p50_ms']:.2f}x.",
        "",
        "## Labels per second against one replica",
        "",
        f"Fake backend, {FAKE_CALL_S * 1000:.0f} ms per call whatever its size (a model of "
        f"batched generation, not an LLM); each caller sends {REQUESTS_PER_CALL} new requests "
        f"per call, {args.seconds:.0f} s per row.",
        "",
        "| callers | merging (@serve.batch) | labels/s | over one call at a time |",
        "|---|---|---|---|",
        *[
            f"| {r['callers']} | {'yes' if r['merging'] else 'no (max_batch_size 1)'} | "
            f"{r['labels_per_s']:.1f} | {r['labels_per_s'] / base[r['callers']]:.2f}x |"
            for r in lps
        ],
        "",
        "## Env steps/s with labels from the Serve app over labels in the trial's process",
        "",
        f"Oracle labels in both, {args.rounds} paired rounds after {args.warmup} warm-up "
        "rounds, one training iteration each.",
        "",
    ]
    for method, rows in loop.items():
        lines += [ratio_table(rows, "configuration", f"{method} in-process"), ""]
    lines += [
        "## BK-Pref: Phi from the reward-model app over Phi in the learner",
        "",
        ratio_table(pref, "configuration", "bk-pref in the learner"),
        "",
    ]
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "serve_in_loop.md").write_text("\n".join(lines))
    (args.results / "serve_in_loop.json").write_text(
        json.dumps(
            {
                **facts,
                "round_trips": rtt,
                "labels_per_second": lps,
                "in_loop": loop,
                "served_potential": pref,
            },
            indent=2,
        )
    )
    print("\n".join(lines))
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
