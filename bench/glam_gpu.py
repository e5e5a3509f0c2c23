"""GLAM's GPU recipe on a GPU: peak GPU memory per process and where an iteration's time goes.

    python -m bench.glam_gpu                                   # the recipe's model folder
    python -m bench.glam_gpu --precisions highest,high --steps 320 --epochs 1
    python -m bench.glam_gpu --random-model ~/models/SmolLM2-1.7B-Instruct   # then the above

Runs ``--iterations`` PPO iterations of ``tune_configs/babyai-gotoredball-glam-gpu.yaml`` in
its own layout (the learner in this process, one remote env runner, half a GPU each), with
``--steps`` env steps per iteration (32 envs x steps/32) and ``--epochs`` epochs of the
recipe's minibatches of 16, once per float32 matmul precision in a fresh Ray (so each
variant's processes start with clean peak-memory counters) whose workers get what
tune_run.py gives its trials (``PYTORCH_CUDA_ALLOC_CONF``; ``--allocator`` overrides it).
Reports per iteration RLlib's sampling and learner-update timers and GAE's value pass (a
connector inside the update), and per process ``torch.cuda.max_memory_allocated`` (the
tensors) and ``max_memory_reserved`` (what the caching allocator held). Writes
``bench/results/glam_gpu.json`` (one entry per variant, appended) and prints the rows.

``--random-model DIR`` writes SmolLM2-1.7B-Instruct's architecture (its config.json's values,
HuggingFaceTB/SmolLM2-1.7B-Instruct) with random weights and the packaged SmolLM2-135M's
tokenizer (the same 49,152-token vocabulary) to DIR, for a machine that cannot download the
weights: memory and speed are the real model's, the scores are not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASK = "babyai-gotoredball-glam-gpu"


def write_random_smollm2_1_7b(folder: Path) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from rl_bk.labeling.backends.packaged_models import packaged_model_path

    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=24,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=8192,
        rope_theta=130000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    gguf = packaged_model_path("smollm2")
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(folder)
    n = sum(p.numel() for p in model.parameters())
    print(f"{folder}: SmolLM2-1.7B's architecture, {n / 1e9:.3f} B random parameters")


def peak_memory() -> dict:
    """This process's peak GPU memory (GiB) since it started."""
    import torch

    if not torch.cuda.is_available():
        return {}
    return {
        "pid": os.getpid(),
        "max_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "max_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
    }


def run_variant(precision: str, args: argparse.Namespace) -> dict:
    import ray

    import env_registry
    from rl_bk.experiments import run as run_module
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.registry import get_method

    if args.allocator is not None:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = args.allocator
    run_module.init_ray(None)  # the runtime environment tune_run.py gives its trials
    env_registry.register_all()
    task = load_task(TASK)
    g = task.glam
    ppo = {**g.ppo, "train_batch_size_per_learner": args.steps, "num_epochs": args.epochs}
    glam = g.model_copy(
        update={
            "ppo": ppo,
            "float32_matmul_precision": precision,
            **({"model": args.model} if args.model else {}),
        }
    )
    algo = get_method("glam").build(task.model_copy(update={"glam": glam}), 0, {}).build_algo()
    entry = {
        "precision": precision,
        "model": glam.model,
        "steps": args.steps,
        "epochs": args.epochs,
        "minibatch_size": ppo["minibatch_size"],
        "allocator": run_module.cuda_alloc_conf(),
        "iterations": [],
    }
    try:
        for i in range(args.iterations):
            started = time.perf_counter()
            result = algo.train()
            timers = result["timers"]
            connectors = result["learners"]["__all_modules__"]["learner_connector"]
            row = {
                "wall_s": round(time.perf_counter() - started, 2),
                "env_steps": int(result["env_runners"]["num_env_steps_sampled"]),
                "sampling_s": round(float(timers["env_runner_sampling_timer"]), 2),
                "learner_update_s": round(float(timers["learner_update_timer"]), 2),
                "gae_s": round(
                    float(connectors["timers"]["connectors"]["general_advantage_estimation"]), 2
                ),
            }
            entry["iterations"].append(row)
            print(f"{precision} iteration {i}: {row}", flush=True)
        entry["learner"] = [
            r.get() for r in algo.learner_group.foreach_learner(lambda _: peak_memory())
        ]
        entry["env_runners"] = algo.env_runner_group.foreach_env_runner(
            lambda _: peak_memory(), local_env_runner=False
        )
    finally:
        algo.stop()
        ray.shutdown()
    print(json.dumps(entry), flush=True)
    return entry


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--precisions",
        default="highest,high",
        help="comma-separated float32 matmul precisions: highest, high, medium",
    )
    p.add_argument("--steps", type=int, default=320, help="env steps per iteration")
    p.add_argument("--epochs", type=int, default=1, help="PPO epochs per iteration")
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--model", help="GLAM's model folder (default: the recipe's)")
    p.add_argument(
        "--allocator",
        help="PYTORCH_CUDA_ALLOC_CONF for the run's processes "
        "(default: tune_run.py's, expandable_segments:True)",
    )
    p.add_argument(
        "--random-model",
        type=Path,
        metavar="DIR",
        help="write SmolLM2-1.7B's architecture with random weights to DIR, exit",
    )
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results" / "glam_gpu.json")
    args = p.parse_args()
    if args.random_model:
        write_random_smollm2_1_7b(args.random_model.expanduser())
        return 0
    import torch

    if not torch.cuda.is_available():
        print("bench.glam_gpu measures the GPU recipe: torch sees no CUDA GPU", file=sys.stderr)
        return 2
    entries = [run_variant(v, args) for v in args.precisions.split(",") if v]
    device = torch.cuda.get_device_name(0)
    old = json.loads(args.results.read_text()) if args.results.is_file() else []
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.results.write_text(
        json.dumps(
            old
            + [
                {"date": stamp, "device": device, "command": " ".join(sys.argv), **e}
                for e in entries
            ],
            indent=1,
        )
        + "\n"
    )
    print(f"appended to {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
