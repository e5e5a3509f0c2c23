"""GLAM's starting point: do the packaged SmolLM2's action scores beat a uniform policy, zero-shot?
And what does one weight sync to the env runners weigh, before and after sending only LoRA?

    python -m bench.glam_prior                          # 100 episodes per arm, episode seeds 0-99
    python -m bench.glam_prior --max-steps 32           # each episode capped at 32 steps
    python -m bench.glam_prior --sync-only              # the weight sync again, the arms kept
    python -m bench.glam_prior --episodes 10 --max-steps 16 --results /tmp/look   # a quick look

**Prior.** Three policies play the same episodes (env seeds 0..N-1, the same for every arm) of
the GLAM task's env (``babyai-gotoredball-glam``: BabyAI GoToRedBall, 8x8, 7 distractors),
through the task's prompt wrapper (goal, the last ``n_obs`` captions and the actions between):

- ``lm-greedy``: the action with the highest score, as RLlib's greedy evaluation picks;
- ``lm-sampled``: an action drawn from softmax(scores), as GLAM's env runners explore;
- ``uniform``: an action drawn uniformly from the 6.

The scores are the GLAM RLModule's own (``GLAMTorchRLModule``, the task's model and prompt
length; no LoRA: peft starts its B matrices at zero, so an untrained adapter changes no score).
Arms run their episodes in lockstep and score the new prompts of all running episodes,
``--batch`` at a time. A prompt's scores are computed once and reused (the module is
deterministic), and a greedy episode whose env state and prompt recur is in a cycle it cannot
leave: it is counted as what it would be, a failure at the env's step limit, without playing the
rest. Sampling draws from a generator seeded by (arm, episode seed), so runs repeat exactly.

Success is the env's (BabyAI pays 1 - 0.9·t/T on success, 0 otherwise; GLAM trains on 20x
that); the tables give the env's own return. 95% intervals: Wilson for rates; mean ± 1.96
standard errors for means and for the paired difference to uniform (same seeds).
``--max-steps`` caps an episode through the level's own ``max_steps`` (the env's T, so the
return's scale changes with it): the cap is the same for every arm and the file says it.

**Weight sync.** After each update RLlib sends ``get_state(inference_only=True)`` of the
learner's module to the env runners. "Before" is RLlib's own TorchRLModule.get_state (the whole
LM with the adapters), "after" is GLAMTorchRLModule's (the adapters and the value head, and one
float, the frozen weights' fingerprint): the size of each pickled (what the object store
carries), for the task's LoRA settings and for full fine-tuning. Then the trainable weights are
moved (as an update would), the state is synced into a runner module built with
``inference_only=True``, and both must give the same scores.

Writes ``bench/results/glam_prior.{md,json}``; a hand-written "Reading" section in the .md is
kept.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

# One torch thread, one prompt per pass: on this shared 2-CPU machine two threads (spinning
# OpenMP barriers) were 4-30x slower per prompt than one, and batching only added padding.
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]

ARMS = ("lm-greedy", "lm-sampled", "uniform")


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------
def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval for a binomial rate."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_interval(values: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """(mean, low, high): mean ± z standard errors."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return (mean, math.nan, math.nan)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = z * sd / math.sqrt(n)
    return (mean, mean - half, mean + half)


# --------------------------------------------------------------------------------------------
# The prior
# --------------------------------------------------------------------------------------------
class CachedScorer:
    """The module's action scores for prompts, each prompt computed once, in batches of
    similar lengths (less padding)."""

    def __init__(self, module: Any, batch: int):
        self.module, self.batch = module, batch
        self.cache: dict[str, Any] = {}
        self.computed = 0
        self.seconds = 0.0

    def __call__(self, prompts: list[str]) -> list[Any]:
        import numpy as np
        import torch
        from ray.rllib.core.columns import Columns

        from rl_bk.methods.glam.prompt_observation import encode_prompt

        new = sorted({p for p in prompts if p not in self.cache}, key=len)
        started = time.perf_counter()
        for i in range(0, len(new), self.batch):
            chunk = new[i : i + self.batch]
            size = max(len(p.encode("utf-8")) for p in chunk)
            obs = torch.from_numpy(np.stack([encode_prompt(p, size) for p in chunk]))
            with torch.no_grad():
                scores = self.module.forward_inference({Columns.OBS: obs})
            for p, s in zip(chunk, scores[Columns.ACTION_DIST_INPUTS].double().numpy()):
                self.cache[p] = s
        self.computed += len(new)
        self.seconds += time.perf_counter() - started
        return [self.cache[p] for p in prompts]


def _state_key(env: Any) -> tuple:
    """What decides a greedy episode's future: the level's state and the prompt."""
    level = env.unwrapped.level
    held = level.carrying
    return (
        tuple(int(v) for v in level.agent_pos),
        int(level.agent_dir),
        None if held is None else (held.type, held.color),
        level.grid.encode().tobytes(),
        env.prompt,
    )


def play(arm: str, seeds: list[int], make_env: Any, scorer: CachedScorer) -> list[dict]:
    """One episode per seed, all in lockstep; returns per-episode records."""
    import numpy as np

    envs = {s: make_env() for s in seeds}
    rngs = {s: np.random.default_rng([ARMS.index(arm), s]) for s in seeds}
    records = {
        s: {"seed": s, "success": False, "return": 0.0, "length": 0, "cycle": False} for s in seeds
    }
    seen: dict[int, set] = {s: set() for s in seeds}
    for s, env in envs.items():
        env.reset(seed=s)
    running, step = list(seeds), 0
    while running:
        if arm == "uniform":
            actions = {s: int(rngs[s].integers(6)) for s in running}
        else:
            scores = scorer([envs[s].prompt for s in running])
            actions = {}
            for s, sc in zip(running, scores):
                if arm == "lm-greedy":
                    actions[s] = int(np.argmax(sc))
                else:
                    p = np.exp(sc - sc.max())
                    actions[s] = int(rngs[s].choice(len(sc), p=p / p.sum()))
        still = []
        for s in running:
            env, rec = envs[s], records[s]
            if arm == "lm-greedy":
                key = _state_key(env)
                if key in seen[s]:  # a deterministic cycle: it runs to the limit, fails
                    rec.update(length=int(env.unwrapped.level.max_steps), cycle=True)
                    continue
                seen[s].add(key)
            _, _, terminated, truncated, info = env.step(actions[s])
            rec["length"] += 1
            rec["return"] += float(info["env_reward"])
            rec["success"] = bool(info.get("success", False))
            if not (terminated or truncated):
                still.append(s)
        running, step = still, step + 1
        if step % 8 == 0 or not running:
            print(
                f"  {arm} step {step}: {len(running)} running, {scorer.computed} prompts "
                f"scored in {scorer.seconds:.0f} s",
                flush=True,
            )
    for env in envs.values():
        env.close()
    return [records[s] for s in seeds]


def summarise(records: list[dict], uniform: list[dict] | None) -> dict[str, Any]:
    n = len(records)
    wins = sum(r["success"] for r in records)
    out = {
        "episodes": n,
        "success_rate": wins / n,
        "success_ci95": wilson(wins, n),
        "mean_return": mean_interval([r["return"] for r in records]),
        "mean_length": mean_interval([float(r["length"]) for r in records]),
        "cycles_cut": sum(r["cycle"] for r in records),
    }
    if uniform is not None:
        diff = [float(a["success"]) - float(b["success"]) for a, b in zip(records, uniform)]
        out["success_minus_uniform"] = mean_interval(diff)
    return out


# --------------------------------------------------------------------------------------------
# The weight sync
# --------------------------------------------------------------------------------------------
def weight_sync(
    model_config: dict[str, Any], spaces: tuple[Any, Any], prompts: list[str]
) -> dict[str, Any]:
    """Pickled sizes of the synced state, RLlib's and GLAM's, and scores after a sync."""
    import numpy as np
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.torch import TorchRLModule

    from rl_bk.methods.glam.prompt_observation import encode_prompt
    from rl_bk.methods.glam.rl_module import GLAMTorchRLModule

    def build(inference_only: bool) -> GLAMTorchRLModule:
        return GLAMTorchRLModule(
            observation_space=spaces[0],
            action_space=spaces[1],
            model_config=model_config,
            inference_only=inference_only,
        )

    def size(state: dict) -> int:
        return len(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))

    learner, runner = build(False), build(True)
    before = TorchRLModule.get_state(learner, inference_only=True)  # RLlib's own
    after = learner.get_state(inference_only=True)
    out = {
        "lora": model_config.get("lora"),
        "before_bytes": size(before),
        "before_tensors": len(before),
        "after_bytes": size(after),
        "after_tensors": sum(isinstance(v, np.ndarray) for v in after.values()),
        "after_other_entries": [k for k, v in after.items() if not isinstance(v, np.ndarray)],
        "after_keys_not_adapter_or_value_head": [
            k
            for k, v in after.items()
            if isinstance(v, np.ndarray) and "lora_" not in k and not k.startswith("value_head.")
        ],
        "trainable_params": sum(p.numel() for p in learner.parameters() if p.requires_grad),
        "all_params": sum(p.numel() for p in learner.parameters()),
    }
    del before, after
    obs = torch.from_numpy(np.stack([encode_prompt(p, 1024) for p in prompts]))

    def scores(module: Any) -> torch.Tensor:
        with torch.no_grad():
            return module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]

    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # as an update would: every trainable weight moves
        for p in learner.parameters():
            if p.requires_grad:
                p.add_(0.02 * torch.randn(p.shape, generator=generator, dtype=p.dtype))
    stale = (scores(learner) - scores(runner)).abs().max().item()
    runner.set_state(learner.get_state(inference_only=True))
    out["max_score_gap_before_sync"] = stale
    out["max_score_gap_after_sync"] = (scores(learner) - scores(runner)).abs().max().item()
    return out


# --------------------------------------------------------------------------------------------
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="babyai-gotoredball-glam")
    p.add_argument("--episodes", type=int, default=100, help="episode seeds 0..N-1, every arm")
    p.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="the level's max_steps (default: the env's own, 64 on GoToRedBall)",
    )
    p.add_argument("--batch", type=int, default=1, help="prompts per forward pass")
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {ARMS}")
    p.add_argument("--no-sync", action="store_true", help="skip the weight-sync measurement")
    p.add_argument(
        "--sync-only",
        action="store_true",
        help="measure the weight sync again and keep the arms of the existing results",
    )
    p.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    args = p.parse_args()

    import torch

    import env_registry
    from bench.paired_rounds import run_facts
    from bench.study import write_keeping_reading
    from rl_bk.experiments.task_config import load_task
    from rl_bk.methods.glam.prompt_observation import GLAMPromptObservation
    from rl_bk.methods.glam.rl_module import GLAMTorchRLModule

    torch.manual_seed(0)
    facts = run_facts("-m bench.glam_prior")
    json_path = args.results / "glam_prior.json"
    if args.sync_only:
        if not json_path.is_file():
            p.error(f"--sync-only keeps the arms of {json_path}, which does not exist")
        kept = json.loads(json_path.read_text())
        args.task = kept["settings"]["task"]
    task = load_task(args.task)
    g = task.glam
    env_config = dict(task.env_config)
    if args.max_steps is not None:
        env_config["level_kwargs"] = {
            **env_config.get("level_kwargs", {}),
            "max_steps": args.max_steps,
        }

    def make_env() -> GLAMPromptObservation:
        return GLAMPromptObservation(
            env_registry.make_env(task.env, env_config), n_obs=g.n_obs, reward_scale=g.reward_scale
        )

    probe = make_env()
    probe.reset(seed=0)
    spaces = (probe.observation_space, probe.action_space)
    base_config = {"model": g.model, "max_prompt_tokens": g.max_prompt_tokens, "seed": 0}
    if args.sync_only:
        arms_facts, settings, runs = kept["facts"], kept["settings"], kept["arms"]
    else:
        arms_facts = facts
        settings = {
            "task": args.task,
            "env": task.env,
            "model": g.model,
            "n_obs": g.n_obs,
            "max_prompt_tokens": g.max_prompt_tokens,
            "episodes": args.episodes,
            "episode_seeds": f"0..{args.episodes - 1}",
            "max_steps": int(probe.unwrapped.level.max_steps),
            "max_steps_capped": args.max_steps is not None,
            "batch": args.batch,
            "torch_threads": torch.get_num_threads(),
        }
        started = time.perf_counter()
        module = GLAMTorchRLModule(
            observation_space=spaces[0],
            action_space=spaces[1],
            model_config=base_config,
            inference_only=True,
        )
        module.eval()
        print(f"{g.model}: built in {time.perf_counter() - started:.0f} s", flush=True)
        runs = play_arms(args, p, module, make_env)

    sync: list[dict[str, Any]] = []
    if not args.no_sync:
        prompts = [probe.prompt]
        for s in range(1, 4):
            probe.reset(seed=s)
            probe.step(2)
            prompts.append(probe.prompt)
        lora = {"r": int(g.lora_r or 16), "alpha": g.lora_alpha}
        for name, lora_setting in (("lora", lora), ("full fine-tuning", None)):
            started = time.perf_counter()
            row = weight_sync({**base_config, "lora": lora_setting}, spaces, prompts)
            sync.append({"variant": name, **row})
            print(
                f"sync {name}: {row['before_bytes'] / 1e6:.1f} MB -> "
                f"{row['after_bytes'] / 1e6:.1f} MB ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    probe.close()

    args.results.mkdir(parents=True, exist_ok=True)
    data = {
        "facts": arms_facts,
        "sync_facts": facts if sync else None,
        "settings": settings,
        "arms": runs,
        "weight_sync": sync,
    }
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    text = report(arms_facts, data["sync_facts"], settings, runs, sync)
    write_keeping_reading(args.results / "glam_prior.md", text)
    print(text)
    return 0


def play_arms(args: Any, parser: Any, module: Any, make_env: Any) -> dict[str, dict[str, Any]]:
    """Every arm's episodes and their summaries."""
    seeds = list(range(args.episodes))
    arms = [a for a in args.arms.split(",") if a]
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms {sorted(unknown)}; valid: {ARMS}")
    runs: dict[str, dict[str, Any]] = {}
    for arm in sorted(arms, key=lambda a: a != "uniform"):  # uniform first: the baseline
        scorer = CachedScorer(module, args.batch)
        started = time.perf_counter()
        records = play(arm, seeds, make_env, scorer)
        runs[arm] = {
            "records": records,
            "seconds": round(time.perf_counter() - started, 1),
            "prompts_scored": scorer.computed,
        }
        print(
            f"{arm}: {sum(r['success'] for r in records)}/{len(records)} successes, "
            f"{runs[arm]['seconds']:.0f} s",
            flush=True,
        )
    uniform = runs.get("uniform", {}).get("records")
    for arm, run in runs.items():
        run["summary"] = summarise(run["records"], uniform if arm != "uniform" else None)
    return runs


def _ci(triple: tuple[float, float, float] | list[float], fmt: str = ".2f") -> str:
    mean, low, high = triple
    return f"{mean:{fmt}} [{low:{fmt}}, {high:{fmt}}]"


def report(
    facts: dict, sync_facts: dict | None, settings: dict, runs: dict, sync: list[dict]
) -> str:
    cap = (
        f"**{settings['max_steps']} steps**, a cap set with `--max-steps` (the level's own "
        "max_steps, every arm alike)"
        if settings["max_steps_capped"]
        else f"{settings['max_steps']} steps, the env's own limit"
    )
    lines = [
        "# GLAM's zero-shot prior: SmolLM2's action scores vs a uniform policy; the weight sync",
        "",
        f"`{facts['command']}` ({facts['date']}, {facts['machine']}).",
        "",
        *(
            [f"Weight sync measured by `{sync_facts['command']}` ({sync_facts['date']}).", ""]
            if sync_facts and sync_facts != facts
            else []
        ),
        f"Task `{settings['task']}` (`{settings['env']}`), GLAM model `{settings['model']}` "
        f"(the GLAM RLModule's scores: each action text's log-likelihood after the prompt of "
        f"the goal and the last {settings['n_obs']} observations and actions, "
        f"{settings['max_prompt_tokens']} tokens at most), no training. "
        f"{settings['episodes']} episodes per arm, env seeds {settings['episode_seeds']} "
        f"(the same for every arm); episodes last at most {cap}. Return: the env's own "
        "(1 − 0.9·t/T on success, else 0; GLAM trains on 20× it). 95% intervals: Wilson for "
        "the success rate, mean ± 1.96 s.e. otherwise; the difference to uniform is paired "
        "by seed.",
        "",
        "SmolLM2-135M is the packaged model that makes the pipeline run on a CPU; these "
        "numbers say what this small model's scores do on this env, not what a language model "
        "knows about it.",
        "",
        "| arm | success rate [95%] | success − uniform [95%] | mean return [95%] | "
        "mean length [95%] | greedy cycles cut | prompts scored | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for arm in ARMS:
        if arm not in runs:
            continue
        s, run = runs[arm]["summary"], runs[arm]
        lo, hi = s["success_ci95"]
        diff = _ci(s["success_minus_uniform"]) if "success_minus_uniform" in s else "–"
        cycles = s["cycles_cut"] if arm == "lm-greedy" else "–"
        prompts = run["prompts_scored"] if arm != "uniform" else "–"
        lines.append(
            f"| {arm} | {s['success_rate']:.2f} [{lo:.2f}, {hi:.2f}] | {diff} | "
            f"{_ci(s['mean_return'], '.3f')} | {_ci(s['mean_length'], '.1f')} | "
            f"{cycles} | {prompts} | {run['seconds']:.0f} |"
        )
    lines += [
        "",
        "`lm-greedy`: the highest score; `lm-sampled`: softmax(scores), as the env runners "
        "explore; `uniform`: 1/6 each. Greedy cycles cut: greedy episodes whose level state "
        "and prompt recurred (a deterministic loop), counted as failures at the step limit "
        "without playing the rest. Prompts scored: distinct prompts the LM evaluated (each "
        "once). Seconds: wall time on a shared machine, not a speed measurement.",
    ]
    if sync:
        lines += [
            "",
            "## One weight sync to the env runners",
            "",
            "What RLlib sends after each update (the learner module's "
            "`get_state(inference_only=True)`), pickled. Before: RLlib's own "
            "`TorchRLModule.get_state` (every tensor of the module). After: "
            "`GLAMTorchRLModule.get_state`, without the weights nothing trains (each runner "
            "loads them itself from the same model). Score gap: max |learner − runner| over the "
            "6 action scores of 4 prompts, after moving every trainable weight (as an update "
            "would), before and after the runner `set_state`s the synced state.",
            "",
            "| variant | trainable / all params | before: MB (tensors) | after: MB (tensors) "
            "| ratio | score gap before sync | after sync |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in sync:
            lines.append(
                f"| {row['variant']} | {row['trainable_params'] / 1e6:.3g}M / "
                f"{row['all_params'] / 1e6:.3g}M | {row['before_bytes'] / 1e6:.1f} "
                f"({row['before_tensors']}) | {row['after_bytes'] / 1e6:.1f} "
                f"({row['after_tensors']}) | {row['before_bytes'] / row['after_bytes']:.0f}× | "
                f"{row['max_score_gap_before_sync']:.3g} | {row['max_score_gap_after_sync']:.3g} |"
            )
        lora = next((r for r in sync if r["lora"]), None)
        if lora is not None:
            lines += [
                "",
                f"LoRA settings: {lora['lora']} (the task's r and alpha, peft's target "
                "modules); tensors in the LoRA sync that are neither an adapter nor the "
                f"value head: {lora['after_keys_not_adapter_or_value_head'] or 'none'}; "
                f"other entries: {lora.get('after_other_entries') or 'none'} (a float that "
                "lets a runner whose own frozen LLM differs refuse the state).",
            ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
