"""How good is each labelling backend? Accuracy on items with known answers, side by side.

    python bench/labeler_quality.py            # writes bench/results/labeler_quality.{md,json}

Items (templated BabyAI-Text, seeded, balanced):
- preference: mission "go to the <color> <type>"; one segment's caption shows the target
  (among distractors), the other shows only distractors or walls; the target's side is A in
  half of the pairs and B in the other half. Correct = the target's side. A tie is wrong.
- helpful: a caption and the mission; half the captions show the target. Correct = yes iff shown.

Backends: the embedded SmolLM2-135M (llama.cpp, grammar-constrained), gemma-3-270m if its
package is installed, the oracle (environment rules: an upper bound, not an LLM), and MiniLM
similarity with fixed rules: preference = the segment whose caption is more similar to the
mission; helpful = cosine(mission, caption) >= 0.5 (fixed in advance, not tuned on these items).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

from env_registry.babyai.captioner import offset_phrase
from rl_bk.labeling.tasks import HelpfulRequest, PreferenceRequest

ROOT = Path(__file__).resolve().parents[1]

COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
TYPES = ("ball", "box", "key")
N_ITEMS = 40
MINILM_HELPFUL_THRESHOLD = 0.5


def _offset(rng: random.Random) -> str:
    return offset_phrase(rng.randint(-3, 3), rng.randint(1, 5))  # the captioner's own wording


def _caption(rng: random.Random, target: tuple[str, str], show_target: bool) -> str:
    sentences = []
    if rng.random() < 0.5:
        side = rng.choice(["left", "forward", "right"])
        sentences.append(f"You see a wall {rng.randint(2, 6)} steps {side}")
    for _ in range(rng.randint(0, 2)):
        color, kind = rng.choice(COLORS), rng.choice(TYPES)
        if (color, kind) != target:
            sentences.append(f"You see a {color} {kind} {_offset(rng)}")
    if show_target:
        sentences.insert(rng.randint(0, len(sentences)),
                         f"You see a {target[0]} {target[1]} {_offset(rng)}")  # fmt: skip
    if not sentences:
        sentences.append("You see nothing in front")
    return ". ".join(sentences) + "."


def make_items(seed: int = 0):
    rng = random.Random(seed)
    preference, helpful = [], []
    for i in range(N_ITEMS):
        target = (rng.choice(COLORS), rng.choice(TYPES))
        mission = f"go to the {target[0]} {target[1]}"
        good, bad = _caption(rng, target, True), _caption(rng, target, False)
        a_is_good = i % 2 == 0
        preference.append((PreferenceRequest(
            segment_a=[good if a_is_good else bad], segment_b=[bad if a_is_good else good],
            criteria=mission, env="babyai"), "A" if a_is_good else "B"))  # fmt: skip
        shown = i % 2 == 1
        helpful.append((HelpfulRequest(caption=_caption(rng, target, shown), task=mission,
                                       env="babyai"), shown))  # fmt: skip
    return preference, helpful


def accuracy(pairs) -> float:
    pairs = list(pairs)
    return sum(p == t for p, t in pairs) / len(pairs)


def evaluate_backend(backend, preference, helpful) -> dict:
    start = time.perf_counter()
    pref = backend.label("preference", [r for r, _ in preference])
    help_ = backend.label("helpful", [r for r, _ in helpful])
    seconds = time.perf_counter() - start
    choices = [lab.choice for lab in pref]
    return {
        "preference_accuracy": accuracy(zip(choices, (t for _, t in preference))),
        "preference_answers": {c: choices.count(c) for c in ("A", "B", "tie")},
        "helpful_accuracy": accuracy(zip((lab.helpful for lab in help_), (t for _, t in helpful))),
        "helpful_yes": sum(lab.helpful for lab in help_),
        "seconds": seconds,
    }


def evaluate_minilm(preference, helpful) -> dict:
    from rl_bk.labeling.embedding import SentenceEmbedder

    emb = SentenceEmbedder()
    start = time.perf_counter()
    choices = []
    for r, _ in preference:
        sim = emb.similarity([r.criteria], [r.segment_a[-1], r.segment_b[-1]])[0]
        choices.append("A" if sim[0] > sim[1] else "B" if sim[1] > sim[0] else "tie")
    answers = [float(emb.similarity([r.task], [r.caption])[0, 0]) >= MINILM_HELPFUL_THRESHOLD
               for r, _ in helpful]  # fmt: skip
    return {
        "preference_accuracy": accuracy(zip(choices, (t for _, t in preference))),
        "preference_answers": {c: choices.count(c) for c in ("A", "B", "tie")},
        "helpful_accuracy": accuracy(zip(answers, (t for _, t in helpful))),
        "helpful_yes": sum(answers),
        "seconds": time.perf_counter() - start,
    }


def main() -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    preference, helpful = make_items()
    rows: dict[str, dict] = {}
    from rl_bk.labeling.backends.oracle import OracleBackend

    rows["oracle (rules; upper bound, not an LLM)"] = evaluate_backend(
        OracleBackend(), preference, helpful)  # fmt: skip
    for packaged, label in (("smollm2", "SmolLM2-135M-Instruct (llama.cpp, embedded)"),
                            ("gemma3-270m", "gemma-3-270m base (llama.cpp)")):  # fmt: skip
        try:
            from rl_bk.labeling.backends.llamacpp import LlamaCppGenerator
            from rl_bk.labeling.backends.llm import LLMBackend

            backend = LLMBackend(LlamaCppGenerator(packaged=packaged), name="llamacpp",
                                 use_chat=packaged == "smollm2")  # fmt: skip
        except Exception as err:  # not installed: say so in the table
            rows[label] = {"skipped": str(err).splitlines()[0][:160]}
            continue
        rows[label] = evaluate_backend(backend, preference, helpful)
    try:
        rows[f"MiniLM similarity (fixed rules, helpful >= {MINILM_HELPFUL_THRESHOLD})"] = (
            evaluate_minilm(preference, helpful))  # fmt: skip
    except Exception as err:
        rows["MiniLM similarity"] = {"skipped": str(err).splitlines()[0][:160]}

    lines = ["# Labeler quality on items with known answers", "",
             f"Command: `python bench/labeler_quality.py` — {time.strftime('%Y-%m-%d %H:%M')}. "
             f"{N_ITEMS} templated BabyAI-Text preference pairs (target side balanced A/B) and "
             f"{N_ITEMS} helpfulness items (half show the target); seed 0. Chance is 0.50.", "",
             "| labeler | preference accuracy | answers A/B/tie | helpful accuracy | "
             "said yes (of 40) | seconds |", "|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in rows.items():
        if "skipped" in r:
            lines.append(f"| {name} | not run: {r['skipped']} | | | | |")
            continue
        a = r["preference_answers"]
        lines.append(
            f"| {name} | {r['preference_accuracy']:.2f} | {a['A']}/{a['B']}/{a['tie']} | "
            f"{r['helpful_accuracy']:.2f} | {r['helpful_yes']} | {r['seconds']:.1f} |"
        )
        print(f"{name:55s} preference {r['preference_accuracy']:.2f}  helpful "
              f"{r['helpful_accuracy']:.2f}")  # fmt: skip
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "labeler_quality.md").write_text("\n".join(lines) + "\n")
    (out / "labeler_quality.json").write_text(json.dumps(rows, indent=2))
    print(f"wrote {out / 'labeler_quality.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
