"""The ``rl-bk`` command: ``serve`` and ``label`` (the labeler app, and labelling a file),
``labels export|import`` (the label store's rows), ``probe`` (a labeller's agreement with the
oracle) and ``knowledge collect|build|show|compare`` (the BK pipeline's stages); ``rl-bk
COMMAND --help`` lists each one's flags, docs/labeler.md and docs/methods.md#the-bk-pipeline
their use. Each subcommand imports Ray, the env packages and the knowledge pipeline inside its
function, so that ``rl-bk --help`` and the label-store commands load none of them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from rich.progress import Progress

from rl_bk.experiments.artifacts import artifact_fingerprint, dataset_fingerprint
from rl_bk.experiments.task_config import TaskConfigError, load_task
from rl_bk.knowledge.numerics import numerics_in_effect, pin_build_numerics, pinned_torch
from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.backends.registry import preflight
from rl_bk.labeling.config import BACKENDS, PACKAGED_MODELS, ConfigError, LabelerConfig
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.store import LabelStore
from rl_bk.labeling.tasks import UnknownTaskError, get_task
from rl_bk.methods.registry import BK_KINDS, KNOWLEDGE, get_method, knowledge_task
from serve_deployments.configs import LabelerAppConfig, load_labeler_app_config


def _add_backend_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        help="a labeler YAML (fields: rl_bk/labeling/config.py, and "
        "serve_deployments/configs.py for serving)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        help="who labels: oracle (hand-written rules, default), llamacpp (the "
        "embedded model), vllm or openai (a server at --base-url), "
        "fake (tests)",
    )
    p.add_argument(
        "--packaged",
        choices=PACKAGED_MODELS,
        help="embedded model (default qwen2.5-coder-1.5b; smollm2 for plumbing)",
    )
    p.add_argument("--model-path", help="a GGUF file (llamacpp)")
    p.add_argument(
        "--answer-mode",
        choices=("token-scores", "text"),
        help="closed questions (preference, helpful) from the answers' token "
        "scores (default) or written under a grammar",
    )
    p.add_argument(
        "--preference-orders",
        type=int,
        choices=(1, 2),
        help="ask each preference pair in both orders (2, default) or as given",
    )
    p.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://host:8000/v1")
    p.add_argument("--model", help="the model name on that server")
    p.add_argument("--api-key-env", help="env variable holding its key (default OPENAI_API_KEY)")
    p.add_argument("--store", dest="store_path", help="the SQLite label store file")


def _config(args: argparse.Namespace) -> LabelerAppConfig:
    fields = (
        "backend",
        "packaged",
        "model_path",
        "answer_mode",
        "preference_orders",
        "base_url",
        "model",
        "api_key_env",
        "store_path",
        "host",
        "port",
        "app_name",
        "num_replicas",
        "max_replicas",
        "num_cpus",
        "num_gpus",
    )
    overrides = {f: getattr(args, f, None) for f in fields}
    if getattr(args, "resources", None):
        try:
            overrides["resources"] = json.loads(args.resources)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"--resources must be a JSON object, e.g. '{{\"llm_node\": 1}}': {err}"
            ) from None
    return load_labeler_app_config(args.config, **overrides)


def serve_main(args: argparse.Namespace) -> int:
    # kept light: Ray and Serve load only for `rl-bk serve`, never for `rl-bk --help`
    import ray
    from ray import serve

    from serve_deployments.labeler import ensure_labeler_app

    cfg = _config(args)
    preflight(cfg)
    # Ctrl-C or SIGTERM from here on stops the app cleanly, even while it is still starting:
    # the app can answer requests a moment before serve.run() returns.
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if args.address:
        ray.init(address=args.address, logging_level="ERROR")
    else:
        ray.init(address="local", include_dashboard=False, logging_level="ERROR")
    ensure_labeler_app(cfg)
    route = cfg.route_prefix if cfg.app_name == "labeler" else f"/{cfg.app_name}"
    url = f"http://{cfg.host}:{cfg.port}{route.rstrip('/')}"
    print(f"labeler up: backend {cfg.backend}, {url}  (GET {url}/metrics; Ctrl-C stops)")
    stop.wait()
    serve.shutdown()
    return 0


def _read_requests(path: Path, task: str, criteria: str | None) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        out = []
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{n}: not JSON ({err.msg})") from None
        return out
    captions = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    if task == "goals":
        return [{"caption": c, **({"mission": criteria} if criteria else {})} for c in captions]
    if task == "helpful":
        if not criteria:
            raise ValueError("a .txt file of captions for 'helpful' needs --criteria TASK")
        return [{"caption": c, "task": criteria} for c in captions]
    raise ValueError(f"task {task!r} needs a .jsonl file of requests (one JSON object a line)")


def label_main(args: argparse.Namespace) -> int:
    spec = get_task(args.task)
    raw = _read_requests(Path(args.file), args.task, args.criteria)
    requests = [spec.request.model_validate(r) for r in raw]
    # Who labels, from the flags; behind --url the app's own labeler answers instead.
    who = LabelerConfig(**_config(args).model_dump(include=set(LabelerConfig.model_fields)))
    labeler = LabelerSpec(who, url=args.url, timeout_s=600, isolate=False).build()

    out = open(args.out, "w") if args.out else sys.stdout
    with Progress(transient=True, disable=not sys.stderr.isatty()) as progress:
        bar = progress.add_task(
            f"labelling {len(requests)} {args.task} requests", total=len(requests)
        )
        for i in range(0, len(requests), args.batch_size):
            batch = requests[i : i + args.batch_size]
            for request, label in zip(batch, labeler(args.task, batch)):
                row = {
                    "request": request.model_dump(),
                    "label": label.model_dump(exclude_none=True),
                }  # what it carries
                out.write(json.dumps(row) + "\n")
            progress.advance(bar, len(batch))
    if args.out:
        out.close()
        print(f"wrote {len(requests)} labels to {args.out}", file=sys.stderr)
    return 0


def labels_main(args: argparse.Namespace) -> int:
    with LabelStore(args.store_path) as store:
        if args.action == "export":
            n = store.export_jsonl(
                args.file, backend=args.backend, model=args.model, task=args.task
            )
            print(f"exported {n} labels from {store.path} to {args.file}")
        else:
            inserted, skipped = store.import_jsonl(args.file)
            print(f"imported {inserted} labels into {store.path} ({skipped} already there)")
    return 0


def probe_main(args: argparse.Namespace) -> int:
    # kept light: the probe sets load the simulators, torch and each family's code
    from rl_bk.experiments.labeler_probes import make_probes, probe_labeller, render_markdown
    from rl_bk.labeling.backends.registry import make_backend

    who = LabelerConfig(**_config(args).model_dump(include=set(LabelerConfig.model_fields)))
    preflight(who)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    probes = make_probes(kinds, args.items, args.goal_states, args.action_states)
    backend = make_backend(who)
    model = getattr(backend, "model", None) or who.backend
    name = f"oracle ({model})" if who.backend == "oracle" else model  # whose answers

    def log(line: str) -> None:  # progress on stderr, the table alone on stdout
        print(line, file=sys.stderr)

    results = {
        "model": name,
        **probe_labeller(backend, probes, text_items=args.text_items, log=log),
    }
    print(render_markdown({"results": {name: results}}))
    if args.json:
        Path(args.json).write_text(json.dumps({"labeller": who.model_dump(), **results}, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def knowledge_main(args: argparse.Namespace) -> int:
    # kept light: the pipeline and the sweep layer load Ray, torch and the simulators
    from rl_bk.experiments import knowledge_pipeline as pipeline
    from rl_bk.experiments.run import with_knowledge_dir

    # the same root the trials resolve, so they find what this builds
    task = with_knowledge_dir(load_task(args.task, smoke=args.smoke), args.knowledge_dir)
    if args.goal_aware:
        task = knowledge_task(task, {"include_mission": True})
    if args.kinds:
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    else:  # what the task's methods need (all BK kinds if none of them needs any)
        needed = [k.kind for k in (get_method(m).knowledge for m in task.methods) if k]
        kinds = list(dict.fromkeys(needed)) or list(BK_KINDS)
    unknown = sorted(set(kinds) - set(KNOWLEDGE))
    if unknown:
        raise ValueError(f"unknown kinds {', '.join(unknown)}; valid: {', '.join(KNOWLEDGE)}")
    if args.action == "compare":
        backends = [b.strip() for b in args.backends.split(",") if b.strip()]
        print("\n".join(pipeline.compare_knowledge(task, kinds, backends, args.reference)))
    elif args.action == "collect":
        print(f"dataset: {pipeline.collect_dataset(task, force=args.force)}")
    elif args.action == "build":
        for kind in kinds:
            folder = pipeline.build_knowledge(task, kind, args.backend, force=args.force)
            print(f"{kind}: {folder}")
    else:
        with pinned_torch():
            probe = numerics_in_effect()["probe"]
        print(f"this machine's build numerics: probe {probe}")
        folders = [("dataset", pipeline.dataset_dir(task))]
        folders += [(k, pipeline.artifact_dir(task, k, args.backend)) for k in kinds]
        for what, folder in folders:
            if not pipeline.is_built(folder):
                print(f"{what}: {folder}\n  missing")
                continue
            # Two machines' builds are the same knowledge only if these match.
            fingerprint = dataset_fingerprint if what == "dataset" else artifact_fingerprint
            done = (folder / pipeline.DONE).read_text().strip()
            built_on = json.loads(done or "{}").get("numerics", {}).get("probe")
            if built_on is None:
                numerics = "numerics unrecorded (built before probes)"
            elif built_on == probe:
                numerics = "built on numerics like this machine's"
            else:
                numerics = f"built on other numerics (probe {built_on}): a build here differs"
            print(f"{what}: {folder}\n  fingerprint {fingerprint(folder)}; {numerics}\n  {done}")
    return 0


def main(argv: list[str] | None = None) -> int:
    # One torch thread per process: the learner shares few cores with its env runners.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if (sys.argv[1:] if argv is None else argv)[:1] == ["knowledge"]:
        # Before anything loads torch: a build on the same kernels on every machine.
        pin_build_numerics()
    parser = argparse.ArgumentParser(
        prog="rl-bk",
        description="rl-bk's labeler and knowledge tools (training runs through tune_run.py)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="start the labeler app on Ray Serve")
    _add_backend_flags(p)
    p.add_argument("--host", help="HTTP host (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="HTTP port (default 8000)")
    p.add_argument("--address", help="a running Ray cluster, e.g. 'auto'")
    p.add_argument(
        "--app-name",
        help="the Serve app's name (default labeler); trials attach "
        "to it with tune_run.py --labeler-app NAME",
    )
    p.add_argument("--num-replicas", type=int, help="replicas (default 1)")
    p.add_argument("--max-replicas", type=int, help="autoscale up to this many replicas")
    p.add_argument("--num-cpus", type=float, help="CPUs per replica (default 0.25)")
    p.add_argument("--num-gpus", type=float, help="GPUs per replica (default 0)")
    p.add_argument(
        "--resources",
        help="custom Ray resources per replica as JSON, e.g. "
        "'{\"llm_node\": 1}' (cluster.yaml's GPU workers have it)",
    )
    p = sub.add_parser("label", help="label a file of requests or captions")
    p.add_argument("task", help="goals, preference, helpful, reward_code or action_scores")
    p.add_argument("file", help="a .jsonl of requests, or a .txt of captions")
    p.add_argument("--out", help="output JSONL (default: stdout)")
    p.add_argument("--criteria", help="task/mission text for a .txt of captions")
    p.add_argument("--url", help="a running labeler (default: label in this process)")
    p.add_argument(
        "--batch-size", type=int, default=32, help="requests per labeler call (default 32)"
    )
    _add_backend_flags(p)
    p = sub.add_parser("labels", help="export the label store's rows to JSONL, or import them")
    p.add_argument("action", choices=["export", "import"])
    p.add_argument("file", help="the JSONL file to write or read")
    p.add_argument("--backend", help="export only this backend's labels")
    p.add_argument("--model", help="export only this model's labels (as stored)")
    p.add_argument("--task", help="export only this task's labels")
    p.add_argument("--store", dest="store_path", help="the SQLite label store file")
    p = sub.add_parser(
        "probe",
        help="how well a labeller agrees with the oracle, on probe sets made from the envs "
        "(BK-Pref's and ONI's questions, ELLM's and BK-Goal's goals, BK-Code, GLAM's actions)",
    )
    p.add_argument(
        "--kinds",
        default="preference,helpful",
        help="comma-separated: preference, helpful, goals-crafter, goals-babyai, code, "
        "action-scores (default preference,helpful)",
    )
    p.add_argument("--items", type=int, default=200, help="items per closed kind (default 200)")
    p.add_argument("--goal-states", type=int, default=50, help="states per goals kind")
    p.add_argument("--action-states", type=int, default=100, help="states for action-scores")
    p.add_argument(
        "--text-items",
        type=int,
        default=0,
        help="items of each closed kind also asked as text under the grammar (default 0)",
    )
    p.add_argument("--json", help="also write the results to this JSON file")
    _add_backend_flags(p)
    p = sub.add_parser(
        "knowledge",
        help="run the knowledge pipeline's stages (collect, "
        "build, show): BK's potentials, Motif's reward model, PTGM's "
        "pre-trained models, BC-PPO's data",
    )
    p.add_argument(
        "action",
        choices=["collect", "build", "show", "compare"],
        help="collect the dataset, build the knowledge (collecting first if "
        "needed), show what is built and where, or compare what --backends built",
    )
    p.add_argument("--task", required=True, help="a task name or YAML (tune_run.py --list)")
    p.add_argument(
        "--kinds",
        help=f"comma-separated: {', '.join(KNOWLEDGE)} (default: those the task's methods use)",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        help="labeler (default: the task's knowledge.labeler.backend)",
    )
    p.add_argument(
        "--backends",
        default="llamacpp,oracle",
        help="compare: the labellers whose built knowledge to set side by side "
        "(default llamacpp,oracle)",
    )
    p.add_argument(
        "--reference", default="oracle", help="compare: the labeller the others are compared with"
    )
    p.add_argument("--force", action="store_true", help="rebuild even if built")
    p.add_argument(
        "--goal-aware",
        action="store_true",
        help="the goal-aware variant: the labeler is told the task's mission (BK's "
        "default withholds it, and one artifact serves every task)",
    )
    p.add_argument("--smoke", action="store_true", help="the task's --smoke settings")
    p.add_argument(
        "--knowledge-dir", help="default $RLBK_KNOWLEDGE_DIR or ~/.cache/rl-bk/knowledge"
    )
    args = parser.parse_args(argv)

    # kept light: after parse_args, so --help never loads gymnasium or pyarrow
    from env_registry.errors import MissingDependencyError
    from rl_bk.knowledge.dataset import DatasetError

    commands = {
        "serve": serve_main,
        "label": label_main,
        "labels": labels_main,
        "probe": probe_main,
        "knowledge": knowledge_main,
    }
    try:
        return commands[args.command](args)
    except (
        ConfigError,
        MissingDependencyError,
        BackendError,
        UnknownTaskError,
        ValueError,
        OSError,
        TaskConfigError,
        DatasetError,
    ) as err:
        print(f"rl-bk {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
