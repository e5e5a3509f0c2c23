"""BK-Code's offline stage: the labeler writes a potential function, and improves it over a few
rounds from what the sandbox saw it do, for one or several independent candidates
(Eureka-style, compared later as trials). Our labeler has no conversation memory, so unlike
BK's chat each request carries the previous code itself. The rounds, the final code and the
files written: :func:`write_potential_code`.
"""

from __future__ import annotations

import json
import logging
import pprint
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rl_bk.knowledge.dataset import sample_segments
from rl_bk.knowledge.trajectory import Chunk, caption_history, windows
from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.labeler import Labeler
from rl_bk.labeling.tasks import MAX_TEXT, RewardCodeRequest
from rl_bk.methods.bk.code.descriptions import (
    FUNCTION_NAME,
    SIGNATURE,
    describe_env,
    window_records,
)
from rl_bk.methods.bk.code.sandbox import CodeError, Sandbox, SandboxError

logger = logging.getLogger(__name__)

FALLBACK_CODE = f"""{SIGNATURE}:
    # Written by rl_bk, not by the labeler: none of this candidate's code ever ran in the
    # sandbox, so its potential is constant and shaping adds nothing.
    return 0.0
"""
_CODE_CHARS = 1600  # of the previous code quoted in feedback
_OUTCOMES = {
    "CodeDefinitionError": "definition_error",
    "CodeError": "code_error",
    "SandboxRefusal": "refused",
    "SandboxTimeout": "timeout",
    "SandboxMemoryError": "out_of_memory",
    "SandboxCrash": "crashed",
}


@dataclass
class CandidateResult:
    index: int
    code: str  # the final code (FALLBACK_CODE when failed)
    failed: bool
    final_round: int | None  # the round whose code is final; None when failed
    rounds_ran: int  # rounds whose code ran without error
    varied: bool  # whether the final code's sample potentials were not all equal


@dataclass
class CodeResult:
    out_dir: Path
    code: str  # code-final.py
    best_candidate: int
    candidates: list[CandidateResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return all(c.failed for c in self.candidates)


@dataclass
class _Outcome:
    ok: bool
    outcome: str
    error: str = ""  # one sentence
    details: str = ""  # the trimmed traceback
    failed_window: list[dict] | None = None
    potentials: list[list[float]] = field(default_factory=list)  # per segment, per state


def write_potential_code(
    labeler: Labeler,
    episodes: Sequence[Chunk],
    out_dir: str | Path,
    *,
    family: str,
    mission: str | None = None,
    rounds: int = 3,
    segments_per_round: int = 5,
    horizon: int = 5,
    candidates: int = 1,
    seed: int = 0,
    time_limit_s: float = 5.0,
    caption_style: str = "smartplay",
    progress: bool = True,
) -> CodeResult:
    """Asks ``labeler`` for ``candidates`` potential functions, ``rounds`` rounds each, and
    saves them.

    1. Round 1 asks for the function with the env description, the signature
       (:mod:`rl_bk.methods.bk.code.descriptions`) and one real window from the dataset,
       printed as the function will receive it (a small model told only about the format
       misread it: it took a window for a dict), and no feedback.
    2. Every answer is loaded into the sandbox and run on ``segments_per_round`` freshly
       sampled segments of the dataset (one window per state, as at RL time).
    3. The next round's feedback carries the previous code and what happened: the refusal or
       the trimmed traceback (with the window it failed on) when it failed; otherwise the
       captions of each segment with the potential the code gave each state, and a request to
       improve it. A "Round r of R" line (and "Candidate i of k") keeps requests distinct, so
       no answer is replayed from the label store by accident.

    A candidate's final code is the last one that ran without error. If none ever ran, the
    candidate is marked failed and falls back to a constant potential (``return 0.0``: shaping
    then does nothing), with a warning. Files written to ``out_dir``: ``code-final.py`` (the
    chosen candidate), ``code-candidate-{i}.py``, ``history.json`` (every round: feedback,
    code, outcome, values) and ``meta.json``.

    Args:
        labeler: ``(task, requests) -> labels``, e.g. a LocalLabeler.
        episodes: the trajectory dataset's episodes (segments are sampled from them).
        out_dir: where the code and its history go (created).
        family: the env family ("babyai", "crafter").
        mission: the task's mission, stated to the LLM; None withholds it (BK's setting).
        rounds: requests per candidate (the first without feedback).
        segments_per_round: segments whose values each round's feedback shows.
        horizon: the window length, and the steps per sampled segment.
        candidates: independent codes to write.
        seed: seeds the segment sampling (candidate ``i`` draws from ``[seed, i]``).
        time_limit_s: the sandbox's limit per batch of windows.
        caption_style: Crafter's caption style, for the description.
        progress: show a tqdm bar.
    """
    if rounds < 1 or candidates < 1 or segments_per_round < 1 or horizon < 1:
        raise ValueError("rounds, candidates, segments_per_round and horizon must be >= 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    description = describe_env(family, mission, horizon=horizon, caption_style=caption_style)
    example = example_window(episodes, horizon, family, seed)
    history: list[dict] = []
    results: list[CandidateResult] = []
    bar = tqdm(
        total=rounds * candidates,
        desc="bk-code rounds",
        unit="round",
        leave=False,
        disable=not progress,
    )
    with Sandbox(time_limit_s=time_limit_s) as sandbox:
        for index in range(candidates):
            results.append(
                _write_candidate(
                    labeler,
                    sandbox,
                    episodes,
                    description,
                    example,
                    history,
                    index=index,
                    candidates=candidates,
                    rounds=rounds,
                    segments_per_round=segments_per_round,
                    horizon=horizon,
                    family=family,
                    seed=seed,
                    bar=bar,
                )
            )
    bar.close()

    best = _choose(results)
    for r in results:
        (out / f"code-candidate-{r.index}.py").write_text(r.code)
    (out / "code-final.py").write_text(results[best].code)
    (out / "history.json").write_text(json.dumps(history, indent=2))
    meta = {
        "labeler": getattr(labeler, "identity", None),
        "is_oracle": getattr(labeler, "is_oracle", None),
        "family": family,
        "mission": mission,
        "rounds": rounds,
        "horizon": horizon,
        "candidates": candidates,
        "segments_per_round": segments_per_round,
        "seed": seed,
        "caption_style": caption_style,
        "time_limit_s": time_limit_s,
        "function": FUNCTION_NAME,
        "signature": SIGNATURE,
        "best_candidate": best,
        "candidate_results": [{k: v for k, v in asdict(r).items() if k != "code"} for r in results],
        "env_description": description,
        "example_input": example,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return CodeResult(out, results[best].code, best, results)


def example_window(episodes: Sequence[Chunk], horizon: int, family: str, seed: int) -> str:
    """One full window of the dataset, as the function receives it (``pprint``'s layout, one
    state a line); the window whose caption has the most sentences, of a few sampled."""
    rng = np.random.default_rng([seed, 7919])
    segments = sample_segments(episodes, horizon - 1, 8, rng) if horizon > 1 else []
    if not segments:
        return ""
    chosen = max(segments, key=lambda s: s.captions[-1].count(". "))
    text = pprint.pformat(
        window_records(windows(chosen, horizon)[-1], family), width=100, sort_dicts=False
    )
    return text if len(text) <= MAX_TEXT else ""


def _write_candidate(
    labeler: Labeler,
    sandbox: Sandbox,
    episodes: Sequence[Chunk],
    description: str,
    example: str,
    history: list[dict],
    *,
    index: int,
    candidates: int,
    rounds: int,
    segments_per_round: int,
    horizon: int,
    family: str,
    seed: int,
    bar,
) -> CandidateResult:
    rng = np.random.default_rng([seed, index])
    tag = ""
    if candidates > 1:
        tag = f"Candidate {index + 1} of {candidates}: write your own approach."
    feedback = tag
    good: tuple[int, str, _Outcome] | None = None
    ran = 0
    for round_ in range(1, rounds + 1):
        entry: dict = {"candidate": index, "round": round_, "feedback": feedback}
        request = RewardCodeRequest(
            env_description=description,
            signature=SIGNATURE,
            feedback=feedback,
            example_input=example,
        )
        header = " ".join(p for p in (tag, f"Round {round_ + 1} of {rounds}.") if p)
        try:
            label = labeler("reward_code", [request])[0]
            code = label["code"] if isinstance(label, dict) else label.code
            code = code.rstrip() + "\n"  # labels come stripped; a file ends with a newline
        except BackendError as e:
            entry.update(code=None, outcome="labeler_error", error=str(e))
            history.append(entry)
            feedback = _fit(
                header,
                "",
                f"Your previous answer could not be used: {e}",
                f"Reply with the function only, starting with: {SIGNATURE}:",
            )
            bar.update(1)
            continue
        segments = sample_segments(episodes, horizon, segments_per_round, rng)
        result = _run(sandbox, code, segments, horizon, family)
        entry.update(
            code=code,
            outcome=result.outcome,
            error=result.error,
            traceback=result.details,
            failed_window=result.failed_window,
            potentials=result.potentials,
            segments=[s.episode_id for s in segments],
        )
        history.append(entry)
        if result.ok:
            good, ran = (round_, code, result), ran + 1
        feedback = _feedback(header, code, result, segments, family)
        bar.update(1)

    if good is None:
        logger.warning(
            "bk-code candidate %d: none of its %d codes ran in the sandbox (last: %s); it falls "
            "back to a constant potential, so shaping with it does nothing",
            index,
            rounds,
            history[-1].get("error") or history[-1]["outcome"],
        )
        return CandidateResult(index, FALLBACK_CODE, True, None, 0, False)
    round_, code, result = good
    values = [v for seg in result.potentials for v in seg]
    return CandidateResult(index, code, False, round_, ran, max(values) > min(values))


def _choose(results: list[CandidateResult]) -> int:
    """The first candidate that ran and tells states apart; else the first that ran; else 0."""
    for test in (lambda r: not r.failed and r.varied, lambda r: not r.failed):
        for r in results:
            if test(r):
                return r.index
    return 0


def _run(
    sandbox: Sandbox, code: str, segments: Sequence[Chunk], horizon: int, family: str
) -> _Outcome:
    """Loads the code and computes every state's potential of every segment, in one call."""
    records = [[window_records(w, family)] for seg in segments for w in windows(seg, horizon)]
    try:
        sandbox.load(code, FUNCTION_NAME)
        values = sandbox.call_many(records)
    except SandboxError as e:
        outcome = _OUTCOMES.get(type(e).__name__, "error")
        if isinstance(e, CodeError):
            inside = e.index is not None and 0 <= e.index < len(records)
            failed = records[e.index][0] if inside else None
            return _Outcome(False, outcome, str(e), e.traceback, failed)
        return _Outcome(False, outcome, str(e))
    potentials, start = [], 0
    for seg in segments:
        potentials.append(values[start : start + len(seg) + 1])
        start += len(seg) + 1
    return _Outcome(True, "ran", potentials=potentials)


def _feedback(
    header: str, code: str, result: _Outcome, segments: Sequence[Chunk], family: str
) -> str:
    if not result.ok:
        body = f"It failed: {result.error}"
        if result.details:
            body += f"\n{result.details}"
        if result.failed_window is not None:
            body += "\nIt failed on this window: " + json.dumps(result.failed_window)
        return _fit(header, code, body, "Fix the error and reply with the whole function.")
    values = [v for seg in result.potentials for v in seg]
    note = ""
    if max(values) == min(values):
        note = (
            f"\nEvery state got the same potential ({values[0]:.3g}), so the agent learns "
            "nothing from it: make it depend on what the captions show."
        )
    instruction = (
        "Improve the function: the potential should rise when the agent moves toward its goal "
        "and fall when it moves away. Reply with the whole function."
    )
    room = _room(header, code, instruction)
    intro = (
        "It ran. Its potentials on sampled segments (each line: a step, then the potential "
        "of that state):\n"
    )
    shown = list(zip(segments, result.potentials))
    while True:  # shorter captions first, then fewer segments, until it fits
        for caption_chars in (None, 240, 160, 100, 60):
            samples = [
                _sample_text(i, seg, pots, family, caption_chars)
                for i, (seg, pots) in enumerate(shown)
            ]
            body = intro + "\n".join(samples) + note
            if len(body) <= room or (len(shown) == 1 and caption_chars == 60):
                return _fit(header, code, body, instruction)
        shown = shown[:-1]


def _sample_text(
    i: int, segment: Chunk, potentials: list[float], family: str, caption_chars: int | None
) -> str:
    if caption_chars is not None:
        segment = Chunk(
            segment.observations,
            [_clip(c, caption_chars) for c in segment.captions],
            segment.actions,
            segment.rewards,
            mission=segment.mission,
        )
    whole = windows(segment, len(segment) + 1)[-1]  # every state of the segment
    lines = caption_history(whole, family).split("\n")
    return f"Segment {i + 1}:\n" + "\n".join(
        f"{line} -> potential = {v:.3f}" for line, v in zip(lines, potentials)
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _quote(code: str) -> str:
    if not code:
        return ""
    shown = code if len(code) <= _CODE_CHARS else code[:_CODE_CHARS] + "\n# ... (cut)"
    return f"Your previous function:\n```python\n{shown.rstrip()}\n```\n"


def _room(header: str, code: str, instruction: str) -> int:
    """Characters left for the body of a feedback."""
    head = f"{header}\n" if header else ""
    return MAX_TEXT - len(head) - len(_quote(code)) - len(instruction) - 1


def _fit(header: str, code: str, body: str, instruction: str) -> str:
    """The feedback, within the request's size limit: the code's head (at most
    ``_CODE_CHARS``), then the body, cut at its start if need be (tracebacks end with what
    matters), then the instruction."""
    head = f"{header}\n" if header else ""
    room = _room(header, code, instruction)
    if len(body) > room:
        body = "..." + body[-(room - 3) :]
    return f"{head}{_quote(code)}{body}\n{instruction}"
