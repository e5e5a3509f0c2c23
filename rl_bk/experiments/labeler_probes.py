"""How well does a labeller agree with the oracle? Probe sets made from the envs with fixed
seeds, each labeller's answers on them, and the measures (``rl-bk probe``; the packaged
models' table: ``bench/results/labeler_quality.md``). What each probe set asks and how
agreement is measured: docs/labeler.md#the-probe-sets.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from minigrid.utils.baby_ai_bot import BabyAIBot
from scipy.stats import binomtest, spearmanr

import env_registry
from env_registry.babyai import oracle as babyai_oracle
from env_registry.babyai.oracle import task_agnostic_potential
from env_registry.crafter import oracle as crafter_oracle
from env_registry.nethack.oracle import is_helpful, split_caption
from rl_bk.knowledge.trajectory import Chunk, step_text, windows
from rl_bk.labeling.backends.llm import LLMBackend
from rl_bk.labeling.closed_answers import CLOSED_ANSWERS, helpful_label, preference_label
from rl_bk.labeling.grammars import normalize_goal
from rl_bk.labeling.prompts import render
from rl_bk.labeling.tasks import (
    ActionScoresRequest,
    GoalsRequest,
    HelpfulRequest,
    PreferenceRequest,
)
from rl_bk.methods.bk.code.descriptions import FUNCTION_NAME, window_records
from rl_bk.methods.bk.code.sandbox import Sandbox, SandboxError
from rl_bk.methods.bk.code.writer import write_potential_code
from rl_bk.methods.bk.preference.training import GENERIC_CRITERIA
from rl_bk.methods.oni.settings import ONISettings

CLOSED = ("preference", "helpful")
OPEN = ("goals-crafter", "goals-babyai")
OTHER = ("code", "action-scores")
KINDS = CLOSED + OPEN + OTHER
SEED = 0


# ---------------------------------------------------------------------------------- probes
def _random_episodes(env_id: str, episodes: int, steps: int, seed: int):
    """(captions, actions) of random-policy episodes (:func:`_chunks`)."""
    return [(c.captions, c.actions.tolist()) for c in _chunks(env_id, episodes, steps, seed)]


def preference_probe(n: int, seed: int = SEED):

    eps = [
        e
        for e in _random_episodes("BabyAI-Text-GoToLocal-RedBall-S20-v0", 400, 64, seed)
        if len(e[1]) >= 4
    ]
    rng = np.random.default_rng(seed)

    def segment():
        captions, actions = eps[int(rng.integers(len(eps)))]
        start = int(rng.integers(len(actions) - 3))
        steps = [step_text(captions[start + i], actions[start + i], "babyai") for i in range(4)]
        return [*steps, captions[start + 4].strip()]

    items = []
    while len(items) < n:
        a, b = segment(), segment()
        truth = babyai_oracle.prefer(a, b, GENERIC_CRITERIA)
        if truth == "tie":
            continue
        want = "AB"[len(items) % 2]
        if truth != want:
            a, b = b, a
        items.append(
            (
                PreferenceRequest(
                    segment_a=a, segment_b=b, criteria=GENERIC_CRITERIA, env="babyai"
                ),
                want,
            )
        )
    return items


def helpful_probe(n: int, seed: int = SEED):

    by_message: dict[str, str] = {}
    for captions, _ in _random_episodes("NetHack-Text-Score-v0", 40, 2000, seed):
        for c in captions:
            message, _ = split_caption(c)
            if message:
                by_message.setdefault(message, c)
    rng = np.random.default_rng(seed)
    yes = [c for c in by_message.values() if is_helpful(c)]
    no = [c for c in by_message.values() if not is_helpful(c)]
    k = min(n // 2, len(yes), len(no))
    yes = [yes[i] for i in rng.permutation(len(yes))[:k]]
    no = [no[i] for i in rng.permutation(len(no))[:k]]
    task = ONISettings().goal
    items = []
    for y, x in zip(yes, no):
        items.append((HelpfulRequest(caption=y, task=task, env="nethack"), True))
        items.append((HelpfulRequest(caption=x, task=task, env="nethack"), False))
    return items


def goals_probe(family: str, n: int, seed: int = SEED):

    if family == "crafter":
        eps = _random_episodes("Crafter-Text-v0", 12, 300, seed)
    else:
        eps = _random_episodes("BabyAI-Text-GoToLocal-RedBall-S20-v0", 200, 64, seed)
    rng = np.random.default_rng(seed)
    items, seen = [], set()
    tries = 0
    while len(items) < n and tries < 50 * n:
        tries += 1
        captions, _ = eps[int(rng.integers(len(eps)))]
        c = captions[int(rng.integers(len(captions)))]
        useful = (
            crafter_oracle.suggest_goals(c)
            if family == "crafter"
            else babyai_oracle.suggest_goals(c, None)
        )
        if not useful or c in seen:  # a state where the oracle sees nothing to do: no measure
            continue
        seen.add(c)
        items.append((GoalsRequest(caption=c, env=family, max_goals=3), useful))  # type: ignore[arg-type]
    return items


def _chunks(env_id: str, episodes: int, steps: int, seed: int):
    """Random-policy episodes as the knowledge pipeline's Chunks (observations included)."""

    env = env_registry.make_env(env_id)
    out = []
    for e in range(episodes):
        rng = np.random.default_rng([seed, e])
        obs, info = env.reset(seed=seed * 10_000 + e)
        observations, captions, actions, rewards = [obs], [info["caption"]], [], []
        term = trunc = False
        for _ in range(steps):
            a = int(rng.integers(env.action_space.n))
            obs, r, term, trunc, info = env.step(a)
            observations.append(obs)
            captions.append(info["caption"])
            actions.append(a)
            rewards.append(r)
            if term or trunc:
                break
        out.append(
            Chunk(
                np.stack(observations).astype(np.float32),
                captions,
                np.asarray(actions, np.int64),
                np.asarray(rewards, np.float32),
                bool(term),
                bool(trunc),
                info.get("mission"),
                f"ep{e}",
            )
        )
    env.close()
    return out


def action_probe(n: int, seed: int = SEED):
    """States along the BabyAI bot's path on GoToRedBall: (GLAM prompt, the bot's action)."""

    # kept light: GLAM's prompt env registers itself with Ray's Tune on import
    from rl_bk.methods.glam.prompt_observation import (
        ACTION_TEXTS,
        build_prompt,
        caption_to_observation,
    )

    env = env_registry.make_env("BabyAI-Text-GoToRedBall-v0")
    rng = np.random.default_rng(seed)
    items, e = [], 0
    while len(items) < n and e < 10 * n:
        _, info = env.reset(seed=seed * 10_000 + e)
        e += 1
        bot = BabyAIBot(env.unwrapped.level)  # the minigrid level inside the text env
        observations, actions = [caption_to_observation(info["caption"])], []
        for _ in range(64):
            action = int(bot.replan())
            if action >= len(ACTION_TEXTS):  # "done": not among GLAM's actions
                break
            if rng.random() < 0.3:  # a few states of each episode, not all
                prompt = build_prompt(info["mission"], observations[-3:], actions[-2:])
                items.append(
                    (
                        ActionScoresRequest(prompt=prompt, actions=list(ACTION_TEXTS)),
                        ACTION_TEXTS[action],
                    )
                )
            _, _, term, trunc, info = env.step(action)
            actions.append(ACTION_TEXTS[action])
            observations.append(caption_to_observation(info["caption"]))
            if term or trunc or len(items) >= n:
                break
    env.close()
    return items[:n]


# ------------------------------------------------------------------------------- measures
def wilson(k: int, n: int) -> list[float]:

    if n == 0:
        return [math.nan, math.nan]
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(ci.low, 3), round(ci.high, 3)]


def agreement(pred: list, truth: list) -> dict:
    k = sum(p == t for p, t in zip(pred, truth))
    counts = Counter(map(str, pred))
    return {
        "n": len(pred),
        "agreement": round(k / len(pred), 3),
        "ci95": wilson(k, len(pred)),
        "majority_rate": round(counts.most_common(1)[0][1] / len(pred), 3),
        "answers": dict(counts),
    }


# --------------------------------------------------------------------------------- runners
def run_closed(kind: str, items, backend, text_items: int) -> dict:

    gen = backend.generator if hasattr(backend, "generator") else None
    truth = [t for _, t in items]
    out: dict = {}
    if gen is None:  # the oracle: the reference itself
        started = time.perf_counter()
        labels = backend.label(kind, [r for r, _ in items])
        pred = [lab.choice if kind == "preference" else lab.helpful for lab in labels]
        seconds = time.perf_counter() - started
        return {"rules": {**agreement(pred, truth), "s_per_label": round(seconds / len(items), 4)}}
    answers = CLOSED_ANSWERS[kind]
    one, both, bias = [], [], []
    started = time.perf_counter()
    prompts = 0
    for r, _ in items:
        o1 = gen.answer_logprobs(render(kind, r).messages, answers)
        prompts += 1
        if kind == "preference":
            swapped = r.model_copy(update={"segment_a": r.segment_b, "segment_b": r.segment_a})
            o2 = gen.answer_logprobs(render(kind, swapped).messages, answers)
            prompts += 1
            one.append(preference_label([o1]).choice)
            both.append(preference_label([o1, o2]).choice)
            bias.append(((o1["A"] - o1["B"]) + (o2["A"] - o2["B"])) / 2)
        else:
            one.append(helpful_label(o1).helpful)
    seconds = time.perf_counter() - started
    s_prompt = round(seconds / prompts, 3)
    out["token-scores, one order"] = {**agreement(one, truth), "s_per_label": s_prompt}
    if kind == "preference":
        out["token-scores, both orders"] = {
            **agreement(both, truth),
            "s_per_label": round(2 * s_prompt, 3),
        }
        finite = [b for b in bias if math.isfinite(b)]
        out["position_bias_logodds_A"] = round(float(np.mean(finite)), 3) if finite else None
    if text_items:
        texter = LLMBackend(gen, backend.name, answer_mode="text")
        sub = items[:text_items]
        started = time.perf_counter()
        pred = []
        for r, _ in sub:
            try:
                lab = texter.label(kind, [r])[0]
                pred.append(lab.choice if kind == "preference" else lab.helpful)
            except Exception:  # a malformed answer counts as a wrong one
                pred.append(None)
        seconds = time.perf_counter() - started
        out["text (grammar)"] = {
            **agreement(pred, [t for _, t in sub]),
            "s_per_label": round(seconds / len(sub), 3),
        }
    return out


def run_goals(items, backend) -> dict:

    started = time.perf_counter()
    suggested = hits = states_hit = failures = 0
    examples = []
    for r, useful in items:
        try:
            goals = backend.label("goals", [r])[0].goals
        except Exception:
            failures += 1
            continue
        family = r.env
        norm = [normalize_goal(family, g) or g for g in goals]
        good = [g for g in norm if g in useful]
        suggested += len(norm)
        hits += len(good)
        states_hit += bool(good)
        if len(examples) < 3:
            examples.append({"caption": r.caption[:160], "goals": goals, "oracle": useful[:5]})
    n = len(items)
    return {
        "n_states": n,
        "goals_suggested": suggested,
        "share_useful": round(hits / suggested, 3) if suggested else None,
        "ci95": wilson(hits, suggested) if suggested else None,
        "states_with_a_useful_goal": round(states_hit / n, 3),
        "failed": failures,
        "s_per_label": round((time.perf_counter() - started) / n, 3),
        "examples": examples,
    }


def run_actions(items, backend) -> dict:
    started = time.perf_counter()
    pred = []
    for r, _ in items:
        scores = backend.label("action_scores", [r])[0].logprobs
        pred.append(r.actions[int(np.argmax(scores))])
    return {
        **agreement(pred, [t for _, t in items]),
        "s_per_label": round((time.perf_counter() - started) / len(items), 3),
    }


def run_code(backend, rounds: int = 3, seed: int = SEED) -> dict:
    """BK-Code's build with this labeller; each round's code against the oracle potential."""

    env_id = "BabyAI-Text-GoToLocal-RedBall-S20-v0"
    data = _chunks(env_id, 40, 64, seed)
    heldout = _chunks(env_id, 20, 64, seed + 1)
    records = [window_records(w, "babyai") for ep in heldout for w in windows(ep, 5)]
    oracle = [task_agnostic_potential(r) for r in records]

    def labeler(task, requests):
        return backend.label(task, requests)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        write_potential_code(
            labeler,
            data,
            tmp,
            family="babyai",
            mission=None,
            rounds=rounds,
            seed=seed,
            progress=False,
        )
        history = json.loads((Path(tmp) / "history.json").read_text())
    seconds = time.perf_counter() - started
    per_round = []
    with Sandbox(time_limit_s=30.0) as sandbox:
        for entry in history:
            row = {"round": entry["round"], "outcome": entry["outcome"]}
            if entry["outcome"] == "ran":
                try:
                    sandbox.load(entry["code"], FUNCTION_NAME)
                    values = sandbox.call_many([[r] for r in records])
                    rho = spearmanr(values, oracle).statistic
                    row["spearman_vs_oracle"] = None if math.isnan(rho) else round(float(rho), 3)
                    row["distinct_values"] = len(set(values))
                except SandboxError as err:
                    row["outcome"] = f"failed on held-out windows: {type(err).__name__}"
            row["code"] = entry.get("code")
            per_round.append(row)
    return {
        "rounds": per_round,
        "heldout_windows": len(records),
        "s_per_round": round(seconds / max(len(history), 1), 1),
    }


def render_markdown(data: dict) -> str:
    """The results of one or more labellers (``data["results"]``: name -> results of
    :func:`probe_labeller`, each with its ``model``) as markdown tables, one per kind."""
    lines = [
        "## Closed questions",
        "",
        "| kind | labeller | answer mode | n | agreement [95% Wilson] | majority answer rate | "
        "answers | s / label |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in CLOSED:
        for res in data.get("results", {}).values():
            r = res.get(kind)
            if not r:
                continue
            for mode, m in r["modes"].items():
                if not isinstance(m, dict):
                    continue
                lines.append(
                    f"| {kind} | {res['model']} | {mode} | {m['n']} | {m['agreement']:.3f} "
                    f"[{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}] | {m['majority_rate']:.2f} | "
                    f"{', '.join(f'{k} {v}' for k, v in sorted(m['answers'].items()))} | "
                    f"{m['s_per_label']} |"
                )
    lines += [
        "",
        "Position bias on preferences (mean log P(A) - log P(B) common to both "
        "orders; positive favours the first-shown segment):",
        "",
    ]
    for res in data.get("results", {}).values():
        r = res.get("preference")
        if r and r["modes"].get("position_bias_logodds_A") is not None:
            lines.append(f"- {res['model']}: {r['modes']['position_bias_logodds_A']:+.2f} nats")
    lines += [
        "",
        "## Open questions (goals)",
        "",
        "| kind | labeller | states | goals suggested | share the oracle also suggests "
        "[95% Wilson] | states with one such goal | failed | s / label |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in OPEN:
        for res in data.get("results", {}).values():
            m = res.get(kind)
            if not m:
                continue
            share = (
                "–"
                if m["share_useful"] is None
                else (f"{m['share_useful']:.3f} [{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]")
            )
            lines.append(
                f"| {kind} | {res['model']} | {m['n_states']} | {m['goals_suggested']} "
                f"| {share} | {m['states_with_a_useful_goal']:.2f} | {m['failed']} | "
                f"{m['s_per_label']} |"
            )
    lines += [
        "",
        "## GLAM: zero-shot action scores",
        "",
        "| labeller | states | agreement with the BabyAI bot [95% Wilson] | "
        "most frequent action (rate) | s / state |",
        "|---|---|---|---|---|",
    ]
    for res in data.get("results", {}).values():
        m = res.get("action-scores")
        if m:
            top = max(m["answers"].items(), key=lambda kv: kv[1])[0]
            lines.append(
                f"| {res['model']} | {m['n']} | {m['agreement']:.3f} [{m['ci95'][0]:.3f}, "
                f"{m['ci95'][1]:.3f}] | {top} ({m['majority_rate']:.2f}) | "
                f"{m['s_per_label']} |"
            )
    lines += [
        "",
        "## BK-Code: each round's potential against the oracle's",
        "",
        "| labeller | round | outcome | Spearman with the oracle potential | distinct "
        "values | s / round |",
        "|---|---|---|---|---|---|",
    ]
    for res in data.get("results", {}).values():
        m = res.get("code")
        if not m:
            continue
        for r in m["rounds"]:
            rho = r.get("spearman_vs_oracle")
            lines.append(
                f"| {res['model']} | {r['round']} | {r['outcome']} | "
                f"{'–' if rho is None else f'{rho:+.3f}'} | "
                f"{r.get('distinct_values', '–')} | {m['s_per_round']} |"
            )
    lines += ["", *data.get("notes", [])]
    return _without_empty_tables("\n".join(lines)) + "\n"


def _without_empty_tables(text: str) -> str:
    """``text`` less its ``## `` sections with a table but no row below its rule (a kind no
    labeller was probed on)."""

    def has_rows(section: str) -> bool:
        below = section.split("|---")[-1].split("\n")[1:]
        return "|---" not in section or any(row.startswith("|") for row in below)

    sections = ("\n" + text).split("\n## ")[1:]
    return "\n".join("## " + s for s in sections if has_rows(s))


def make_probes(
    kinds: list[str], items: int = 200, goal_states: int = 50, action_states: int = 100
) -> dict[str, list]:
    """Each kind's probe set (fixed seeds: the same items on every machine)."""
    probes: dict[str, list] = {}
    for kind in kinds:
        if kind == "preference":
            probes[kind] = preference_probe(items)
        elif kind == "helpful":
            probes[kind] = helpful_probe(items)
        elif kind in OPEN:
            probes[kind] = goals_probe(kind.split("-")[1], goal_states)
        elif kind == "action-scores":
            probes[kind] = action_probe(action_states)
        elif kind == "code":
            probes[kind] = []  # BK-Code's probe is its build (run_code)
        else:
            raise ValueError(f"unknown probe kind {kind!r}; valid: {', '.join(KINDS)}")
    return probes


def probe_labeller(
    backend, probes: dict[str, list], *, text_items: int = 0, log=print
) -> dict[str, dict]:
    """One labeller's results on each probe set (``backend``: a labelling backend,
    ``rl_bk.labeling.backends``); the oracle (no generator) is the reference of the closed
    kinds and answers no action scores or goals to be compared with itself."""
    oracle = not hasattr(backend, "generator")
    results: dict[str, dict] = {}
    for kind, items in probes.items():
        started = time.strftime("%Y-%m-%d %H:%M")
        log(f"[{started}] {getattr(backend, 'model', 'oracle')} {kind} ({len(items)} items)")
        if kind in CLOSED:
            results[kind] = {"modes": run_closed(kind, items, backend, text_items), "ran": started}
        elif kind == "code":
            results[kind] = {**run_code(backend), "ran": started}
        elif oracle:
            continue
        elif kind == "action-scores":
            results[kind] = {**run_actions(items, backend), "ran": started}
        else:
            results[kind] = {**run_goals(items, backend), "ran": started}
    return results
