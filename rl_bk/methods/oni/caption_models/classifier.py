"""ONI-Classification: a message classifier, trained online on the LLM's helpful labels, so that
messages the LLM has not seen yet (or never will: it is slower than the env) still get a
reward: 1 where p(helpful) exceeds a threshold, else 0. Cross-entropy puts the decision
boundary at 0.5; a higher threshold makes the reward sparser without retraining.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from rl_bk.methods.oni.caption_models.char_cnn import CharCNNEncoder, mlp_head
from rl_bk.methods.oni.caption_models.message_bytes import MESSAGE_LENGTH

#: Class indices of the logits.
NOT_HELPFUL, HELPFUL = 0, 1


class MessageClassifier(nn.Module):
    """``(B, length)`` message bytes -> ``(B, 2)`` logits (0 = not helpful, 1 = helpful)."""

    def __init__(
        self,
        length: int = MESSAGE_LENGTH,
        hidden: Sequence[int] = (512, 512),
        dropout: float = 0.1,
    ):
        super().__init__()
        self.encoder = CharCNNEncoder(length)
        self.head = mlp_head(self.encoder.out_dim, 2, hidden, dropout)

    def forward(self, messages: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(messages))


def classification_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy; ``labels`` 0/1, as ints or as the floats a label table holds."""
    return F.cross_entropy(logits, labels.long())


def helpful_probability(logits: torch.Tensor) -> torch.Tensor:
    """``(B,)`` softmax probability of the helpful class."""
    return torch.softmax(logits, dim=-1)[..., HELPFUL]


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of rows whose arg-max class is the label (nan for an empty batch)."""
    if labels.numel() == 0:
        return float("nan")
    return (logits.argmax(dim=-1) == labels.long()).float().mean().item()
