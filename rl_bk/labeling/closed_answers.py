"""Closed questions answered from token scores: the model's probability of each allowed
answer where its reply begins (each answer's one-token spellings summed), preferences asked in
both orders so that a bias toward one position cancels, every label carrying its probability.
These functions are pure: a TextGenerator supplies the log-probabilities
(:meth:`~rl_bk.labeling.backends.base.TextGenerator.answer_logprobs`). Why:
docs/labeler.md#closed-questions-answers-read-from-token-scores.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from rl_bk.labeling.tasks import HelpfulLabel, PreferenceLabel

#: The allowed answers of each closed task, in the words the prompts ask for.
CLOSED_ANSWERS: dict[str, tuple[str, ...]] = {
    "preference": ("A", "B", "tie"),
    "helpful": ("yes", "no"),
}


def surface_forms(answer: str) -> list[str]:
    """The spellings of ``answer`` a reply may begin with: cases, with or without a space."""
    cases = dict.fromkeys([answer, answer.lower(), answer.capitalize(), answer.upper()])
    return [f"{lead}{c}" for c in cases for lead in ("", " ")]


def normalise_token(text: str) -> str:
    """How a token's text is compared with an answer: stripped, lower case."""
    return text.strip().lower()


def logsumexp(values: Iterable[float]) -> float:
    vals = [v for v in values if v != -math.inf]
    if not vals:
        return -math.inf
    m = max(vals)
    return m + math.log(sum(math.exp(v - m) for v in vals))


def log_softmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores renormalised over the allowed answers (the mass on other tokens dropped)."""
    total = logsumexp(scores.values())
    if total == -math.inf:  # the model put nothing on any answer: no information
        return {k: -math.log(len(scores)) for k in scores}
    return {k: v - total for k, v in scores.items()}


def answers_from_top_logprobs(top: Mapping[str, float], answers: Sequence[str]) -> dict[str, float]:
    """Each answer's log-probability from a top-k list (token text -> log-prob), as an API's
    ``top_logprobs`` gives it. An answer none of whose spellings is in the list gets the
    list's smallest log-probability: an upper bound on its true score."""
    floor = min(top.values(), default=-math.inf)
    out = {}
    for answer in answers:
        key = normalise_token(answer)
        matches = [lp for tok, lp in top.items() if normalise_token(tok) == key]
        out[answer] = logsumexp(matches) if matches else floor
    return out


# ------------------------------------------------------------------------------- labels
def preference_label(
    orders: Sequence[Mapping[str, float]],
) -> PreferenceLabel:
    """The label of a pair from one or two orders' answer log-probs.

    ``orders[0]``: the pair as asked (segment A shown as "A"); ``orders[1]`` (optional): the
    pair swapped (segment A shown as "B"). Each segment's score is the mean over the orders
    of the log-prob of the letter it was shown under; a tie's, the mean of "tie". ``p_a`` is
    P(segment A better | not a tie); ``choice`` the most probable of the three.
    """
    if not 1 <= len(orders) <= 2:
        raise ValueError(f"a preference is asked in one or two orders, not {len(orders)}")
    asked = [
        log_softmax({k: o.get(k, -math.inf) for k in CLOSED_ANSWERS["preference"]}) for o in orders
    ]
    seg_a = [asked[0]["A"], *(o["B"] for o in asked[1:])]
    seg_b = [asked[0]["B"], *(o["A"] for o in asked[1:])]
    tie = [o["tie"] for o in asked]
    combined = log_softmax({"A": _mean(seg_a), "B": _mean(seg_b), "tie": _mean(tie)})
    p = {k: math.exp(v) for k, v in combined.items()}
    decided = p["A"] + p["B"]
    p_a = 0.5 if decided <= 0 else p["A"] / decided
    choice = max(("A", "B", "tie"), key=lambda k: p[k])  # a tie of scores goes to A, as asked
    return PreferenceLabel(choice=choice, p_a=_prob(p_a), p_tie=_prob(p["tie"]))  # type: ignore[arg-type]


def helpful_label(scores: Mapping[str, float], threshold: float = 0.5) -> HelpfulLabel:
    """yes when P(yes | yes or no) >= ``threshold``; the label carries that probability."""
    probs = log_softmax({k: scores.get(k, -math.inf) for k in CLOSED_ANSWERS["helpful"]})
    p_yes = math.exp(probs["yes"])
    return HelpfulLabel(helpful=p_yes >= threshold, p_yes=_prob(p_yes))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _prob(p: float) -> float:
    return round(min(max(p, 0.0), 1.0), 6)
