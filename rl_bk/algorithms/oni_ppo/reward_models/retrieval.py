"""ONI-Retrieval: the LLM's labels as a lookup table, caption -> reward.

The simplest of ONI's reward models: every caption the LLM has labelled keeps its label
(1.0 helpful, 0.0 not), and a caption not labelled yet gives 0.0 until its label arrives. It
generalises to nothing, which is the point of comparison with the classifier and ranker; on
NetHack it is competitive because the same messages recur constantly.

A plain dict inside, so the table pickles (Ray checkpoints, actor hand-offs) as is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np


class RetrievalTable:
    """Caption -> label value; unknown captions give ``default`` (0.0)."""

    def __init__(self, labels: Mapping[str, float] | None = None, default: float = 0.0):
        self.default = float(default)
        self._labels: dict[str, float] = {}
        if labels:
            self.update(labels)

    def update(self, labels: Mapping[str, float]) -> int:
        """Adds labels (a caption labelled again takes its new value); returns how many
        captions were new."""
        new = sum(1 for caption in labels if caption not in self._labels)
        self._labels.update((caption, float(value)) for caption, value in labels.items())
        return new

    def rewards(self, captions: Iterable[str]) -> np.ndarray:
        """``(N,)`` float32: each caption's label, ``default`` where it has none."""
        if isinstance(captions, str):
            raise TypeError("rewards() takes a sequence of captions, not one string")
        get, default = self._labels.get, self.default
        return np.fromiter((get(c, default) for c in captions), np.float32)

    def known(self, caption: str) -> bool:
        return caption in self._labels

    def as_dict(self) -> dict[str, float]:
        """A copy of the labels (e.g. for a JSON export)."""
        return dict(self._labels)

    def __contains__(self, caption: object) -> bool:
        return caption in self._labels

    def __len__(self) -> int:
        return len(self._labels)

    def __repr__(self) -> str:
        return f"RetrievalTable({len(self)} captions, default={self.default})"
