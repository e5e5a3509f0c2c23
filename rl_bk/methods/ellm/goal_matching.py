"""ELLM's intrinsic reward ("Guiding Pretraining in RL with LLMs", Du et al. 2023): pay the
agent when what it just did matches a goal an LLM suggested for the state it did it from, once
per goal per episode (ELLM's novelty filter), as ELLM's ``text_crafter`` does it. The steps:
:class:`GoalMatcher`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rl_bk.labeling import embedding

# Provisional: ELLM used 0.99 with paraphrase-MiniLM-L3-v2; we embed with all-MiniLM-L6-v2 and
# the envs write achieved texts in the goal vocabulary, so an exact match scores 1.0 and 0.9
# lets only close rewordings through. To be calibrated on real LLM suggestions.
DEFAULT_THRESHOLD = 0.9


class Embedder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) unit vectors."""
        ...


@dataclass
class EpisodePiece:
    """Consecutive steps of one episode. ``suggestions[t]``: the goals suggested for the state
    before step ``t`` (None: not known yet, e.g. no label); ``achieved[t]``: the texts step
    ``t`` achieved (``info["achieved"]`` of the state after it); ``ends_episode``: the last
    step terminated or truncated the episode."""

    episode_id: str
    suggestions: list[list[str] | None]
    achieved: list[list[str]]
    ends_episode: bool = False

    def __len__(self) -> int:
        return len(self.achieved)


def normalise(text: str, synonyms: dict[str, str] | None = None) -> str:
    """Lowercase, stripped, without a final full stop ("Collect wood." reads "collect wood"),
    then its canonical form if ``synonyms`` names one."""
    t = text.strip().lower()
    t = t[:-1].rstrip() if t.endswith(".") else t
    return (synonyms or {}).get(t, t)


def _similarities(embedder: Embedder, a: list[str], b: list[str]) -> np.ndarray:
    if not a or not b:
        return np.zeros((len(a), len(b)))
    distinct = list(dict.fromkeys(a + b))
    vectors = np.asarray(embedder.encode(distinct), np.float32)
    row = {t: i for i, t in enumerate(distinct)}
    return (vectors[[row[t] for t in a]] @ vectors[[row[t] for t in b]].T).astype(np.float64)


def _ids(
    texts: Sequence[str], table: dict[str, int], synonyms: dict[str, str] | None = None
) -> list[int]:
    """The ids of ``texts`` (normalised, empty ones left out, each once) in ``table``, where
    new texts get the next id."""
    out: list[int] = []
    for text in texts:
        key = normalise(text, synonyms)
        if key:
            i = table.setdefault(key, len(table))
            if i not in out:
                out.append(i)
    return out


class GoalMatcher:
    """ELLM's reward over batches of :class:`EpisodePiece`. Per step ``t`` of an episode:

    1. candidates: the goals suggested for the state before step ``t``, less the goals that
       already paid in this episode. This is ELLM's novelty filter (its ``take_action``
       records the suggestion a step matched, and later suggestions of that text are
       dropped). It drops only goals that were suggested and then achieved: achieving
       something nobody suggested leaves its goal open. It compares texts, after ``synonyms``
       (Crafter: "attack cow" and "eat cow" are one goal, as ELLM treats them, since eating a
       cow is what attacking one does);
    2. ``r_t`` = the largest ``cos(g, a)`` over candidates ``g`` and texts ``a`` achieved by
       step ``t`` (the env's ``info["achieved"]``), if above ``threshold``; else 0;
    3. the candidate that matched best (ELLM's ``closest_suggestion``) joins the episode's
       paid goals.

    The train batch holds pieces of episodes (RLlib splits episodes across batches), so each
    episode's paid goals are kept between calls, by episode id, in a bounded LRU dict, and
    forgotten with the piece that ends the episode.

    A step that achieved nothing pays nothing whatever was suggested, and achievements are
    rare, so only the suggestions of steps that achieved something are embedded: all distinct
    texts of one :meth:`rewards` call go to the embedder in one ``encode`` call, the
    similarities are one matrix product, and the per-step loop only visits those steps.
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        max_episodes: int = 10_000,
        synonyms: dict[str, str] | None = None,
    ):
        """``embedder``: anything with ``encode(texts) -> unit vectors``; None loads the
        packaged MiniLM on first use. ``max_episodes``: how many unfinished episodes' paid
        goals are kept (the least recently seen go first). ``synonyms``: goal text -> the
        canonical text it counts as (:data:`rl_bk.methods.ellm.vocabulary.GOAL_SYNONYMS`)."""
        if max_episodes < 1:
            raise ValueError(f"max_episodes must be >= 1, got {max_episodes}")
        self.threshold, self.max_episodes = threshold, max_episodes
        self.synonyms = dict(synonyms or {})
        self._embedder = embedder
        self._own_embedder = embedder is None
        self._episodes: OrderedDict[str, set[str]] = OrderedDict()  # normalised paid goals
        self._stats = dict.fromkeys(
            (
                "calls",
                "steps",
                "rewarded_steps",
                "steps_without_suggestions",
                "steps_with_achievements",
                "goals_matched",
                "suggestions_already_paid",
                "reward_sum",
                "encoded",
                "seconds",
            ),
            0.0,
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self._own_embedder:  # the model is rebuilt where the matcher lands
            state["_embedder"] = None
        return state

    def _get_embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = embedding.SentenceEmbedder()
        return self._embedder

    # --------------------------------------------------------------------------- rewards
    def rewards(self, pieces: Sequence[EpisodePiece]) -> list[np.ndarray]:
        """One float64 array per piece, one reward per step."""
        started = time.perf_counter()
        goal_ids: dict[str, int] = {}  # suggested texts (rows)
        done_ids: dict[str, int] = {}  # achieved texts (columns)
        # Per piece, the steps that achieved something: (t, suggested rows or None, columns).
        events: list[list[tuple[int, list[int] | None, list[int]]]] = []
        s, syn = self._stats, self.synonyms
        for piece in pieces:
            if len(piece.suggestions) != len(piece.achieved):
                raise ValueError(
                    f"episode {piece.episode_id!r}: {len(piece.suggestions)} suggestion lists "
                    f"for {len(piece.achieved)} steps"
                )
            steps = []
            for t, achieved in enumerate(piece.achieved):
                cols = _ids(achieved, done_ids, syn) if achieved else []
                if cols:
                    suggested = piece.suggestions[t]
                    rows = None if suggested is None else _ids(suggested, goal_ids, syn)
                    steps.append((t, rows, cols))
            events.append(steps)
            s["steps"] += len(piece)
            s["steps_without_suggestions"] += sum(x is None for x in piece.suggestions)
            s["steps_with_achievements"] += len(steps)

        if goal_ids and done_ids:
            sims = _similarities(self._get_embedder(), list(goal_ids), list(done_ids))
            s["encoded"] += len(set(goal_ids) | set(done_ids))
        else:
            sims = np.zeros((len(goal_ids), len(done_ids)))
        goal_texts = list(goal_ids)
        out = [self._piece_rewards(p, steps, sims, goal_texts) for p, steps in zip(pieces, events)]
        s["calls"] += 1
        s["seconds"] += time.perf_counter() - started
        return out

    def _piece_rewards(
        self,
        piece: EpisodePiece,
        steps: list[tuple[int, list[int] | None, list[int]]],
        sims: np.ndarray,
        goal_texts: list[str],
    ) -> np.ndarray:
        """Rewards of one piece (its steps in order), then its episode's paid goals updated."""
        s, threshold = self._stats, self.threshold
        rewards = np.zeros(len(piece))
        paid = self._episodes.pop(piece.episode_id, set())
        for t, rows, cols in steps:
            if not rows:
                continue
            fresh = [r for r in rows if goal_texts[r] not in paid]  # the novelty filter
            s["suggestions_already_paid"] += len(rows) - len(fresh)
            if not fresh:
                continue
            best = sims[np.ix_(fresh, cols)].max(axis=1)
            if best.max() > threshold:
                # float32 products of unit vectors can exceed 1 by an ulp
                rewards[t] = min(float(best.max()), 1.0)
                paid.add(goal_texts[fresh[int(best.argmax())]])  # ELLM's closest suggestion
                s["rewarded_steps"] += 1
                s["goals_matched"] += int((best > threshold).sum())
                s["reward_sum"] += rewards[t]
        if not piece.ends_episode:
            self._episodes[piece.episode_id] = paid
            while len(self._episodes) > self.max_episodes:
                self._episodes.popitem(last=False)  # the least recently seen
        return rewards

    # --------------------------------------------------------------------------- metrics
    def metrics(self) -> dict[str, float]:
        """Counters since construction: steps, steps that paid (``rewarded_steps``), steps
        without known suggestions, steps that achieved something, goals that matched on a
        paying step (``goals_matched``), suggestions dropped as already paid, the reward's
        sum and mean per step, and cost per call."""
        s = self._stats
        calls, steps = max(s["calls"], 1.0), max(s["steps"], 1.0)
        out = {k: float(v) for k, v in s.items() if k not in ("encoded", "seconds")}
        out["mean_reward"] = s["reward_sum"] / steps
        out["episodes_tracked"] = float(len(self._episodes))
        out["encoded_per_call"] = s["encoded"] / calls
        out["seconds_per_call"] = s["seconds"] / calls
        return out

    def __repr__(self) -> str:
        return (
            f"GoalMatcher(threshold={self.threshold}, max_episodes={self.max_episodes}, "
            f"{len(self._episodes)} episodes tracked)"
        )
