"""ONI's online reward model, as a learner-only RLModule beside the policy
(:class:`~rl_bk.methods.oni.caption_models.classifier.MessageClassifier` or
:class:`~rl_bk.methods.oni.caption_models.ranking.MessageRanker`), so its weights are
checkpointed with the policy and rewards are scored with the weights the learner trains; env
runners never get it. It keeps a copy to score with while the other is fitted, and the
labelled examples it is fitted on. Details: docs/methods.md#onis-reward-models.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

from rl_bk.methods.oni.caption_models.classifier import (
    MessageClassifier,
    accuracy,
    classification_loss,
    helpful_probability,
)
from rl_bk.methods.oni.caption_models.message_bytes import MESSAGE_LENGTH, encode_messages
from rl_bk.methods.oni.caption_models.ranking import (
    MessageRanker,
    bradley_terry_loss,
    pair_accuracy,
)

torch, nn = try_import_torch()

ONI_MODULE_ID = "oni_reward_model"
KINDS = ("classification", "ranking")


def _stable_hash(key: Hashable) -> int:
    return int.from_bytes(hashlib.sha256(repr(key).encode()).digest()[:8], "big")


class OnlineRewardModel(TorchRLModule):
    """``model_config``: ``kind`` ("classification": examples are ``caption -> 1.0/0.0``;
    "ranking": ``(caption_a, caption_b) -> P(B preferred)``), ``message_length`` (256),
    ``held_out_every`` (10).

    It holds two copies of the net: ``net``, which the learner fits, and ``scorer``, which
    rewards are computed with and which takes ``net``'s weights when a fit is published, so
    fitting can run beside training without a half-updated net scoring. It also holds the
    labelled examples, as they arrive from the online label queue (plain Python lists, not
    checkpointed: the labels themselves are in the label store, and a restored run gets them
    back from there without asking the LLM). One label in ``held_out_every`` (chosen by a
    stable hash of the caption, so the split never changes) is kept out of training to
    measure the model's accuracy on labels it never saw."""

    @override(TorchRLModule)
    def setup(self):
        kind = self.model_config.get("kind", "classification")
        if kind not in KINDS:
            raise ValueError(f"OnlineRewardModel kind must be one of {KINDS}, got {kind!r}")
        self.kind = kind
        self.length = int(self.model_config.get("message_length", MESSAGE_LENGTH))
        self.held_out_every = int(self.model_config.get("held_out_every", 10))
        self.net = (
            MessageClassifier(self.length)
            if kind == "classification"
            else MessageRanker(self.length)
        )
        # Rewards are scored with a copy that only changes when a fit is published, so the
        # learner may fit ``net`` in a background thread while batches are scored.
        self.scorer = copy.deepcopy(self.net).eval()
        self.scorer.requires_grad_(False)
        self.published = 0  # fits published to the scorer (0: it is still the random init)
        self.train_keys: list[Hashable] = []
        self.train_values: list[float] = []
        self.held_out: dict[Hashable, float] = {}
        self.new_examples = 0  # since the learner last fitted

    # ------------------------------------------------------------------------- examples
    def add_examples(self, labels: Mapping[Hashable, float]) -> None:
        for key, value in labels.items():
            if self.held_out_every > 1 and _stable_hash(key) % self.held_out_every == 0:
                self.held_out[key] = float(value)
            else:
                self.train_keys.append(key)
                self.train_values.append(float(value))
                self.new_examples += 1

    @property
    def num_examples(self) -> int:
        return len(self.train_keys)

    # -------------------------------------------------------------------------- scoring
    def _bytes(self, captions: Sequence[str]) -> torch.Tensor:
        # On the learner's device: on a GPU learner (``learner.num_gpus``) the model is there.
        return torch.from_numpy(encode_messages(captions, self.length)).to(self._device())

    def _device(self) -> torch.device:
        return next(self.net.parameters()).device

    @torch.no_grad()
    def score(self, captions: Sequence[str]) -> np.ndarray:
        """p(helpful) (classification) or the raw reward (ranking) of each caption, by the
        last published fit."""
        if not len(captions):
            return np.zeros(0)
        out = self.scorer(self._bytes(captions))
        if self.kind == "classification":
            out = helpful_probability(out)
        return out.double().cpu().numpy()

    @torch.no_grad()
    def publish(self) -> None:
        """Scores from now on use the weights ``net`` has now."""
        self.scorer.load_state_dict(self.net.state_dict())
        self.published += 1

    def ready(self, min_examples: int) -> bool:
        """Whether rewards may be read from the scorer: a fit on at least ``min_examples``
        labelled examples has been published."""
        return self.published > 0 and self.num_examples >= min_examples

    # ------------------------------------------------------------------------- training
    def loss_on(self, keys: Sequence[Hashable], values: Sequence[float]):
        """(loss, accuracy) of the model on examples."""
        targets = torch.tensor(values, dtype=torch.float32, device=self._device())
        if self.kind == "classification":
            logits = self.net(self._bytes(list(keys)))
            return classification_loss(logits, targets), accuracy(logits, targets)
        a = self.net(self._bytes([k[0] for k in keys]))
        b = self.net(self._bytes([k[1] for k in keys]))
        return bradley_terry_loss(a, b, targets), pair_accuracy(a, b, targets)

    @torch.no_grad()
    def held_out_accuracy(self) -> float:
        if not self.held_out:
            return float("nan")
        items = list(self.held_out.items())  # one call: the connector may add to it meanwhile
        was_training = self.net.training
        self.net.eval()
        _, acc = self.loss_on([k for k, _ in items], [v for _, v in items])
        self.net.train(was_training)
        return float(acc)

    # ----------------------------------------------------------------- RLModule surface
    @override(TorchRLModule)
    def _forward(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {}  # never run on a train batch: the learner fits it on labels instead

    @override(TorchRLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {}
