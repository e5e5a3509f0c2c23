"""ONI's intrinsic reward for one train batch, from labels that arrive while training goes on:
the batch's new captions are queued for labelling (never waited for), the labels that arrived
go to the online reward model, and each step is paid by the reward type (retrieval,
classification, ranking, motif, cosine-bow, none), divided by the caption's count in the
episode to the power beta. The steps: :class:`OnlineIntrinsicReward`. Everything here runs
once per batch on the learner; nothing runs per env step.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from rl_bk.connectors.learner.episode_chunks import EpisodeChunk
from rl_bk.labeling.labeler import LabelerSpec
from rl_bk.labeling.queue import AsyncLabelQueue
from rl_bk.labeling.tasks import HelpfulRequest, PreferenceRequest
from rl_bk.methods.oni.caption_models.cosine_bow import CosineBoWReward
from rl_bk.methods.oni.caption_models.count_decay import EpisodeCounts
from rl_bk.methods.oni.caption_models.ranking import (
    RunningMeanStd,
    preference_target,
    quantile_threshold,
    thresholded_reward,
)
from rl_bk.methods.oni.motif import load_motif_model
from rl_bk.methods.oni.rl_module import ONI_MODULE_ID
from rl_bk.methods.oni.settings import ONISettings

REWARD_TYPES = ("none", "retrieval", "classification", "ranking", "motif", "cosine-bow")
LABELLED_TYPES = ("retrieval", "classification", "ranking")
MODEL_TYPES = ("classification", "ranking")
MAX_CAPTION_POOL = 10_000  # captions kept to draw ranking pairs from
MESSAGE_COUNT_KEY = "message_count"  # the env's per-episode count of the step's message


class OnlineIntrinsicReward:
    """The :class:`~rl_bk.connectors.learner.intrinsic_rewards.IntrinsicRewardFn` of ONI.

    The caption of a step is the text the env put in ``info[caption_key]`` after the step
    (NetHack: ``"message"``, the message line, as ONI; other envs: ``"caption"``). For every
    train batch:

    1. the batch's distinct non-empty captions that have no label yet are queued for
       labelling (:class:`~rl_bk.labeling.queue.AsyncLabelQueue`, newest first, never waited
       for); ranking queues random pairs of captions seen so far instead,
       ``pairs_per_batch`` at a time while fewer than two label batches wait (ONI's rule);
    2. labels that arrived since the last batch go to the online reward model
       (classification and ranking), which the learner fits after each PPO update;
    3. each step gets ``r_int`` by ``reward_type``:

       - ``retrieval``: the caption's label (1 helpful, 0 not, 0 while unlabelled);
       - ``classification``: 1 where the model's p(helpful) > ``classification_threshold``;
       - ``ranking``: the Bradley-Terry model's reward, normalised by a running mean and std
         of the rewards of the steps seen, kept where it exceeds ``ranking_threshold`` (or the
         ``ranking_quantile`` of the batch's normalised rewards);
       - ``motif``: the same with a model trained offline (:mod:`rl_bk.methods.oni.motif`),
         the normalisation of its dataset, and (Motif's) the threshold at the
         ``motif_quantile`` of the normalised reward over that dataset;
       - ``cosine-bow``: bag-of-words cosine similarity to the ``goal`` text, kept above
         ``cosine_threshold``: ONI's ELLM-BoW baseline;
       - ``none``: 0 (the extrinsic-only baseline).

       Until a fit on at least ``min_examples`` labelled examples has been published,
       classification and ranking pay 0 (an untrained net's output is noise).
    4. the weighted reward is ``llm_coeff * r_int * N ** -beta``, ``N`` the caption's count in
       the episode so far (this occurrence included): the env's own ``info["message_count"]``
       where it reports one (NetHack, as ONI's ``msg_count``), else counted here per episode.
    """

    def __init__(
        self,
        *,
        reward_type: str,
        labeler: LabelerSpec | None = None,
        family: str | None = None,
        motif_dir: str | None = None,
        seed: int = 0,
        settings: ONISettings | None = None,
        **overrides: Any,
    ):
        """``settings``: ONI's settings (the task file's ``oni:`` section), with ``overrides``
        (any of its fields) in place; the rest says which reward and where its parts are."""
        if reward_type not in REWARD_TYPES:
            raise ValueError(
                f"unknown ONI reward type {reward_type!r}; valid: {', '.join(REWARD_TYPES)}"
            )
        if reward_type in LABELLED_TYPES and labeler is None:
            raise ValueError(f"reward type {reward_type!r} needs a labeler (LabelerSpec)")
        if reward_type == "motif" and not motif_dir:
            raise ValueError(
                "reward type 'motif' needs motif_dir: a reward model trained "
                "offline (rl-bk knowledge build --kinds motif)"
            )
        self.settings = (settings or ONISettings()).updated(overrides)
        self.reward_type, self.labeler = reward_type, labeler
        self.family, self.motif_dir = family, motif_dir
        # Only a labeler computing on training's CPUs is held back; a server's time is free.
        self.label_busy_fraction = (
            self.settings.label_busy_fraction
            if labeler is not None and labeler.computes_here
            else 1.0
        )
        self._rng = random.Random(seed)
        self._counts = EpisodeCounts()
        self._queue: AsyncLabelQueue | None = None
        self._bow: Any = None
        self._motif: Any = None
        self._rms = RunningMeanStd()
        self._seen: set[str] = set()
        self._pool: list[str] = []
        self._stats = dict.fromkeys(
            ("steps", "steps_with_caption", "steps_labelled", "steps_rewarded"), 0
        )

    # ------------------------------------------------------------------------ lazy parts
    @property
    def queue(self) -> AsyncLabelQueue:
        if self._queue is None:
            if self.reward_type == "ranking":
                self._queue = AsyncLabelQueue(
                    self.labeler.build,
                    "preference",  # type: ignore[union-attr]
                    lambda pair: PreferenceRequest(
                        segment_a=[pair[0]],
                        segment_b=[pair[1]],
                        criteria=self.settings.goal,
                        env=self.family,
                    ),
                    lambda label: preference_target(label.choice),
                    batch_size=self.settings.label_batch_size,
                    max_busy_fraction=self.label_busy_fraction,
                )
            else:
                self._queue = AsyncLabelQueue(
                    self.labeler.build,
                    "helpful",  # type: ignore[union-attr]
                    lambda caption: HelpfulRequest(
                        caption=caption, task=self.settings.goal, env=self.family
                    ),
                    lambda label: 1.0 if label.helpful else 0.0,
                    batch_size=self.settings.label_batch_size,
                    max_busy_fraction=self.label_busy_fraction,
                )
        return self._queue

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_queue"] = state["_bow"] = state["_motif"] = None
        return state

    # --------------------------------------------------------------------------- rewards
    def __call__(self, pieces: Sequence[EpisodeChunk], rl_module: Any) -> list[np.ndarray]:
        captions = [
            [str(i.get(self.settings.caption_key) or "").strip() for i in p.infos[1:]]
            for p in pieces
        ]
        distinct = list(dict.fromkeys(c for cs in captions for c in cs if c))
        model = None
        if self.reward_type in MODEL_TYPES:
            model = rl_module[ONI_MODULE_ID].unwrapped()
        if self.reward_type in LABELLED_TYPES:
            self._ask_and_collect(distinct, model)
        value = self._values(distinct, captions, model)
        out = []
        for piece, cs in zip(pieces, captions):
            counts = self._episode_counts(piece, cs)
            r_int = np.array([value.get(c, 0.0) if c else 0.0 for c in cs], np.float64)
            out.append(self.settings.llm_coeff * r_int * counts ** (-self.settings.beta))
            if piece.ends_episode:
                self._counts.forget(piece.episode_id)
            s = self._stats
            s["steps"] += len(cs)
            s["steps_rewarded"] += int((r_int != 0).sum())
            s["steps_with_caption"] += sum(1 for c in cs if c)
            if self.reward_type in ("retrieval", "classification"):
                s["steps_labelled"] += sum(c in self.queue for c in cs if c)
        return out

    def _episode_counts(self, piece: EpisodeChunk, captions: list[str]) -> np.ndarray:
        """N of each step: the env's own count of the message in the episode when it reports
        one (NetHack's ``message_count``, as ONI's wrapper keeps ``msg_count``), else this
        learner's count of the caption in the episode so far."""
        env_counts = [i.get(MESSAGE_COUNT_KEY) for i in piece.infos[1:]]
        if captions and all(c is not None for c in env_counts):
            return np.maximum(np.asarray(env_counts, np.float64), 1.0)
        return self._counts.counts(piece.episode_id, captions)

    def _ask_and_collect(self, distinct: list[str], model: Any) -> None:
        q = self.queue
        self._seen.update(distinct)
        if self.reward_type == "ranking":
            for c in distinct:  # a bounded pool of captions to draw pairs from
                if len(self._pool) < MAX_CAPTION_POOL:
                    self._pool.append(c)
                else:
                    self._pool[self._rng.randrange(MAX_CAPTION_POOL)] = c
            if len(self._pool) >= 2 and q.pending < 2 * self.settings.label_batch_size:
                q.ask(
                    tuple(self._rng.sample(self._pool, 2))
                    for _ in range(self.settings.pairs_per_batch)
                )
        else:
            q.ask(distinct)
        new = q.take_new()
        if model is not None and new:
            model.add_examples(new)

    def _values(self, distinct: list[str], captions: list[list[str]], model: Any) -> dict:
        """r_int of each distinct caption of the batch."""
        t = self.reward_type
        if t == "none" or not distinct:
            return {}
        if t == "retrieval":
            return {c: float(self.queue.get(c, 0.0)) for c in distinct}
        if t == "cosine-bow":
            if self._bow is None:
                self._bow = CosineBoWReward(self.settings.goal, self.settings.cosine_threshold)
            return dict(zip(distinct, self._bow.rewards(distinct).astype(np.float64)))
        if t == "classification":
            if not model.ready(self.settings.min_examples):
                return {}
            p = model.score(distinct)
            return dict(
                zip(distinct, (p > self.settings.classification_threshold).astype(np.float64))
            )
        # ranking and motif: normalised, thresholded Bradley-Terry rewards
        if t == "motif":
            if self._motif is None:
                self._motif = load_motif_model(self.motif_dir)  # type: ignore[arg-type]
            raw = dict(zip(distinct, self._motif.score(distinct)))
            mean, std = self._motif.mean, self._motif.std
        else:
            if not model.ready(self.settings.min_examples):
                return {}
            raw = dict(zip(distinct, model.score(distinct)))
            self._rms.update(np.array([raw[c] for cs in captions for c in cs if c]))
            mean, std = float(self._rms.mean), float(self._rms.std)
        values = np.array([raw[c] for c in distinct])
        threshold = self.settings.ranking_threshold
        if t == "motif" and self.settings.motif_quantile is not None:  # Motif: a dataset quantile
            threshold = self._motif.threshold_at(self.settings.motif_quantile)
        elif self.settings.ranking_quantile is not None:
            threshold = quantile_threshold((values - mean) / std, self.settings.ranking_quantile)
        return dict(zip(distinct, thresholded_reward(values, mean, std, threshold)))

    # --------------------------------------------------------------------------- metrics
    def metrics(self) -> dict[str, float]:
        s = self._stats
        steps = max(s["steps"], 1)
        out = {"steps_rewarded_fraction": s["steps_rewarded"] / steps}
        if self.reward_type in LABELLED_TYPES and self._queue is not None:
            out.update(self._queue.metrics())
            out["captions_seen"] = float(len(self._seen))
            out["labeler_failed_to_start"] = float(self._queue.error is not None)
            if self.reward_type != "ranking":
                labelled = sum(c in self._queue for c in self._seen)
                out["captions_annotated_fraction"] = labelled / max(len(self._seen), 1)
                # of the steps with a caption (an empty one is never labelled)
                out["steps_labelled_fraction"] = s["steps_labelled"] / max(
                    s["steps_with_caption"], 1
                )
        return out

    def close(self) -> None:
        if self._queue is not None:
            self._queue.close()
