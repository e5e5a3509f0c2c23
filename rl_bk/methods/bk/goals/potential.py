"""BK-Goal at RL time (BK's ``GoalReward``): Phi(s_t) = how well the last transition matches a
goal suggested for situations like the current one, retrieved by the similarity of the
recent history to the goal list's keys (:class:`GoalPotential`). How texts become vectors,
and why the threshold is 0.5 for MiniLM where BK used 0.85 with bert-small, measured:
docs/methods.md#bk-goals-potential.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from rl_bk.knowledge.trajectory import (
    ACTION_NAMES,
    Chunk,
    Window,
    action_name,
    caption_history,
    flat,
    step_text,
    window_index,
)
from rl_bk.labeling.embedding import SentenceEmbedder
from rl_bk.methods.bk.goals.builder import GoalList
from rl_bk.methods.bk.sources import WindowMemo, split_by_chunk

DEFAULT_THRESHOLD = 0.5
SENTENCE_VECTORS_FILE = "sentence_vectors.npz"

# Sentence ends; and the action, which follows a caption's last sentence with no full stop.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|\s+(?=You choose the action:)")
_MARKER = re.compile(r"^(?:Step \d+:|Current observation:)\s*")


class Embedder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) unit vectors."""
        ...


def transition_text(window: Window, family: str | None) -> str:
    """BK's one-step text into the window's current state (its caption alone at a first state)."""
    c = window.captions
    if len(c) == 1:
        return c[0].strip()
    return f"{step_text(c[-2], window.actions[-1], family)} Current observation: {c[-1].strip()}"


def sentences(text: str) -> list[str]:
    """The sentences of a text, markers and final full stops removed (the cache's unit)."""
    out = [_MARKER.sub("", s.strip()).rstrip(". ") for s in _SENTENCE_END.split(text)]
    return [s for s in out if s] or [text.strip()]


def _caption_sentences(caption: str) -> list[str]:
    """A caption's sentences as they come out of a longer text holding it (none if empty)."""
    return [
        p
        for p in (_MARKER.sub("", x.strip()).rstrip(". ") for x in _SENTENCE_END.split(caption))
        if p
    ]


def save_sentence_vectors(folder: str | Path, captions: Sequence[str], family: str | None) -> Path:
    """Embeds (packaged MiniLM) every distinct sentence of ``captions`` and of the family's
    action phrases into ``folder``/sentence_vectors.npz, for :class:`GoalPotential` to start
    from. On BabyAI a 29k-state random-policy dataset has 895 distinct sentences: ~4 s here,
    once per artifact instead of once per trial."""
    said = [f"You choose the action: {name}." for name in ACTION_NAMES.get(family or "", ())]
    texts = list(dict.fromkeys(s for c in [*captions, *said] for s in _caption_sentences(c)))
    embedder = SentenceEmbedder()
    vectors = embedder.encode(texts) if texts else np.zeros((0, embedder.dim), np.float32)
    path = Path(folder) / SENTENCE_VECTORS_FILE
    np.savez_compressed(
        path,
        sentences=np.array(texts, dtype=object),
        vectors=vectors,
        model=np.array(embedder.model),
    )
    return path


def load_sentence_vectors(path: Path) -> dict[str, np.ndarray]:
    """What :func:`save_sentence_vectors` wrote (empty if there is no such file)."""
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=True) as saved:
        return dict(zip(saved["sentences"].tolist(), saved["vectors"].astype(np.float32)))


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


class GoalPotential:
    """PotentialSource "bk-goal" over a :class:`GoalList` (or the folder holding goals.json).

    For each state's window of ``horizon`` states (default 4: the 3-step segments of the keys
    plus the current state):

    1. the query: the window's history text (:func:`caption_history`, the keys' format),
       compared (cosine) with every key of the goal list; the goals of the ``top_k`` most
       similar keys (their union) are the candidate goals;
    2. the transition "<caption_{t-1}> You choose the action: <a_{t-1}>. Current observation:
       <caption_t>" (caption_t alone at a chunk's first state) is embedded;
    3. Phi = the largest cosine similarity between it and a candidate goal if above
       ``threshold``, else 0.

    Every batch is one ``encode`` call over its distinct texts (or sentences).
    """

    name = "bk-goal"

    def __init__(
        self,
        goal_list: GoalList | str | Path,
        *,
        top_k: int = 3,
        threshold: float = DEFAULT_THRESHOLD,
        horizon: int = 4,
        embedding: Literal["sentences", "texts"] = "sentences",
        embedder: Embedder | None = None,
    ):
        """``embedder``: anything with ``encode(texts) -> unit vectors``; None loads the
        packaged MiniLM on first use."""
        if top_k < 1 or horizon < 1:
            raise ValueError(f"top_k and horizon must be >= 1, got {top_k} and {horizon}")
        if embedding not in ("sentences", "texts"):
            raise ValueError(f"embedding must be 'sentences' or 'texts', got {embedding!r}")
        self.goal_list = goal_list if isinstance(goal_list, GoalList) else GoalList.load(goal_list)
        self.top_k, self.threshold, self.horizon = top_k, threshold, horizon
        self.embedding = embedding
        self._embedder = embedder
        self._own_embedder = embedder is None
        self._index: dict[str, np.ndarray] | None = None
        self._memo = WindowMemo()
        self._caption_cache: dict[str, np.ndarray] = {}
        self._sentence_vectors: dict[str, np.ndarray] | None = None
        folder = None if isinstance(goal_list, GoalList) else Path(goal_list)
        self.vectors_file = folder / SENTENCE_VECTORS_FILE if folder is not None else None
        self._stats = {"calls": 0, "states": 0, "encoded": 0, "positive": 0, "seconds": 0.0}

    @classmethod
    def from_dir(
        cls,
        out_dir: str | Path,
        top_k: int = 3,
        threshold: float = DEFAULT_THRESHOLD,
        horizon: int = 4,
        **options: Any,
    ) -> GoalPotential:
        return cls(out_dir, top_k=top_k, threshold=threshold, horizon=horizon, **options)

    @property
    def family(self) -> str | None:
        return self.goal_list.family

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_index"] = None
        state["_memo"], state["_caption_cache"], state["_sentence_vectors"] = WindowMemo(), {}, None
        if self._own_embedder:  # the model is rebuilt where the source lands
            state["_embedder"] = None
        return state

    # --------------------------------------------------------------------------- vectors
    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (per the embedding mode), with one ``encode`` call."""
        parts = [[t] for t in texts] if self.embedding == "texts" else [sentences(t) for t in texts]
        distinct = list(dict.fromkeys(p for ps in parts for p in ps))
        if not distinct:
            return np.zeros((0, 1), np.float32)
        encoded = self._encode(distinct)
        if self.embedding == "texts":
            row = {t: i for i, t in enumerate(distinct)}
            return encoded[[row[t] for t in texts]]
        row = {p: i for i, p in enumerate(distinct)}
        ids = np.fromiter((row[p] for ps in parts for p in ps), np.int64)
        starts = np.cumsum([0] + [len(ps) for ps in parts[:-1]])
        sums = np.add.reduceat(encoded[ids], starts, axis=0)
        return _normalise(sums).astype(np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            self._embedder = SentenceEmbedder()
        self._stats["encoded"] += len(texts)
        return np.asarray(self._embedder.encode(texts), np.float32)

    def _dim(self) -> int:
        if self._index is None:
            self._index = self._build_index()
        return int(self._index["goals"].shape[1])

    def _build_index(self) -> dict[str, np.ndarray]:
        gl = self.goal_list
        vecs = self.vectors(gl.keys + gl.goals)
        membership = np.zeros((len(gl.keys), len(gl.goals)), bool)
        for k, ids in enumerate(gl.key_goals):
            membership[k, ids] = True
        return {
            "keys": vecs[: len(gl.keys)],
            "goals": vecs[len(gl.keys) :],
            "membership": membership,
        }

    # --------------------------------------------------------------------------- scoring
    def __call__(self, chunks: Sequence[Chunk]) -> list[np.ndarray]:
        if not chunks:
            return []
        started = time.perf_counter()
        values = self._chunk_potentials(chunks)
        s = self._stats
        s["calls"] += 1
        s["states"] += len(values)
        s["positive"] += int((values > 0).sum())
        s["seconds"] += time.perf_counter() - started
        return split_by_chunk(values, chunks)

    def _chunk_potentials(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Phi of every window of ``chunks``: windows seen in earlier batches are looked up,
        each new distinct window scored once. The memo holds the best match before the
        threshold, so the threshold may change between calls; the other settings may not."""
        gl = self.goal_list
        n_states = sum(len(c) + 1 for c in chunks)
        if not gl.goals or not gl.keys:
            return np.zeros(n_states)
        captions = [caption for c in chunks for caption in c.captions]
        no_action = max((int(c.actions.max()) + 1 for c in chunks if len(c)), default=0)
        index, actions = window_index(chunks, self.horizon, no_action)
        self._dim()  # keys and goals are embedded first, once
        memo = self._memo
        memo.start_batch()
        ids = memo.state_ids(captions)
        slots = memo.window_slots(ids, index)
        values, missing = memo.lookup(memo.window_keys(slots, actions))
        if missing:
            first = np.fromiter((rows[0] for rows in missing.values()), np.int64)
            if self.embedding == "sentences":
                new = self._sentence_matches(captions, index[first], actions[first], no_action)
            else:
                ws = flat(chunks, self.horizon)
                new = self._text_matches([ws[i] for i in first])
            for window_rows, value in zip(missing.values(), new):
                values[window_rows] = value
            memo.store(missing, new)
        return self._threshold(values)

    def _sentence_matches(
        self, captions: list[str], index: np.ndarray, actions: np.ndarray, no_action: int
    ) -> np.ndarray:
        """:meth:`potentials` in the "sentences" mode, without building any text: a window's
        vector is the sum of its captions' and actions' sentence vectors, normalised, which is
        what splitting its history or transition text into sentences gives."""
        used = np.unique(index[index >= 0])
        state_vectors = np.zeros((len(captions) + 1, self._dim()), np.float32)  # last: padding
        action_vectors = np.zeros((no_action + 1, state_vectors.shape[1]), np.float32)
        said = [f"You choose the action: {action_name(self.family, a)}." for a in range(no_action)]
        sums = self._caption_sums([captions[i] for i in used] + said)  # one encode call
        state_vectors[used], action_vectors[:no_action] = sums[: len(used)], sums[len(used) :]
        rows = np.where(index >= 0, index, len(captions))
        history = state_vectors[rows].sum(axis=1) + action_vectors[actions].sum(axis=1)
        transition = state_vectors[rows[:, -1]]
        if self.horizon > 1:  # the previous state and the action from it (zeros on padding)
            transition = transition + state_vectors[rows[:, -2]] + action_vectors[actions[:, -2]]
        return self._best_match(_normalise(history), _normalise(transition))

    def _caption_sums(self, captions: list[str]) -> np.ndarray:
        """Sum of each caption's sentence vectors (cached per caption and per sentence)."""
        known = self._caption_cache
        if len(known) > self._memo.capacity:
            known.clear()
        new = [c for c in dict.fromkeys(captions) if c not in known]
        if new:
            vectors = self._sentence_table()
            parts = [_caption_sentences(c) for c in new]
            todo = [p for p in dict.fromkeys(p for ps in parts for p in ps) if p not in vectors]
            if todo:
                vectors.update(zip(todo, self._encode(todo)))
            zero = np.zeros(self._dim(), np.float32)
            for caption, ps in zip(new, parts):
                known[caption] = sum((vectors[p] for p in ps), zero)
        return np.stack([known[c] for c in captions]) if captions else np.zeros((0, self._dim()))

    def _sentence_table(self) -> dict[str, np.ndarray]:
        """Sentence -> vector: those the artifact saved (the dataset's captions, embedded when
        the goal list was built, so trials do not re-encode them), then those met since."""
        if self._sentence_vectors is None:
            self._sentence_vectors = {}
            if self._own_embedder and self.vectors_file is not None:
                self._sentence_vectors = load_sentence_vectors(self.vectors_file)
        if len(self._sentence_vectors) > self._memo.capacity:
            self._sentence_vectors.clear()
        return self._sentence_vectors

    def potentials(self, ws: Sequence[Window]) -> np.ndarray:
        """Phi of each window, in order, from the windows' whole texts (one ``encode`` call for
        all of them; no memo). The reference for what :meth:`__call__` computes faster."""
        gl = self.goal_list
        if not len(ws) or not gl.goals or not gl.keys:
            return np.zeros(len(ws))
        return self._threshold(self._text_matches(ws))

    def _text_matches(self, ws: Sequence[Window]) -> np.ndarray:
        self._dim()  # keys and goals are embedded first, once
        family = self.family
        # Identical windows (an agent turning in place) are scored once: about a third of a
        # BabyAI batch is distinct.
        distinct: dict[tuple[str, str], int] = {}
        inverse = np.array(
            [
                distinct.setdefault(
                    (caption_history(w, family), transition_text(w, family)), len(distinct)
                )
                for w in ws
            ]
        )
        queries = [query for query, _ in distinct]
        transitions = [transition for _, transition in distinct]
        vecs = self.vectors(queries + transitions)
        return self._best_match(vecs[: len(queries)], vecs[len(queries) :])[inverse]

    def _threshold(self, best: np.ndarray) -> np.ndarray:
        return np.where(best > self.threshold, best, 0.0).astype(np.float64)

    def _best_match(self, queries: np.ndarray, transitions: np.ndarray) -> np.ndarray:
        """The largest similarity of each transition to a goal retrieved by its query (unit
        vectors), before the threshold."""
        gl = self.goal_list
        if self._index is None:
            self._index = self._build_index()
        index = self._index
        k = min(self.top_k, len(gl.keys))
        nearest = np.argpartition(-(queries @ index["keys"].T), k - 1, axis=1)[:, :k]
        allowed = index["membership"][nearest].any(axis=1)  # (N, goals): union over top-k keys
        return np.where(allowed, transitions @ index["goals"].T, -np.inf).max(axis=1)

    def metrics(self) -> dict[str, float]:
        s = self._stats
        calls, states = max(s["calls"], 1), max(s["states"], 1)
        out = {
            "calls": float(s["calls"]),
            "states": float(s["states"]),
            "seconds_per_call": s["seconds"] / calls,
            "encoded_per_call": s["encoded"] / calls,
            "positive_fraction": s["positive"] / states,
        }
        out["window_memo_hit_rate"] = self._memo.hit_rate()
        hits = getattr(self._embedder, "cache_hits", None)
        misses = getattr(self._embedder, "cache_misses", None)
        if hits is not None and misses is not None and hits + misses:
            out["embedding_cache_hit_rate"] = hits / (hits + misses)
        return out

    def __repr__(self) -> str:
        return (
            f"GoalPotential({len(self.goal_list.goals)} goals, {len(self.goal_list.keys)} "
            f"keys, top_k={self.top_k}, threshold={self.threshold}, horizon={self.horizon}, "
            f"embedding={self.embedding!r})"
        )
