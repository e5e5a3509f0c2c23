"""A learner piece that puts the train batch's rows in random order, so that PPO's first
epoch draws random minibatches as every later epoch does, as CleanRL's PPO and BK's
``train_rs.py`` (mansicer/background-knowledge-rl) draw them; RLlib's minibatch iterator
shuffles only from the second epoch. Details: docs/methods.md#bk-bk-code-bk-pref-bk-goal.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import tree
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

torch, _ = try_import_torch()


def _take(column: Any, order: np.ndarray) -> Any:
    if torch is not None and isinstance(column, torch.Tensor):
        return column[torch.as_tensor(order, device=column.device)]
    return np.asarray(column)[order]


class ShuffleTrainBatch(ConnectorV2):
    """Permutes every column of each stateless module's batch by one random order.

    It runs last, after GAE (which needs the rows in time order), and only on modules without
    state: a recurrent module's rows are sequences. APPO's V-trace reads its rows in time
    order; its learners never run this piece.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self._rng = np.random.default_rng(seed)

    @override(ConnectorV2)
    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        for module_id, module_batch in batch.items():
            if module_id in rl_module.keys() and rl_module[module_id].is_stateful():
                continue
            rows = {len(column) for column in tree.flatten(module_batch)}
            if len(rows) != 1:
                raise ValueError(
                    f"ShuffleTrainBatch: module {module_id!r}'s columns have different lengths "
                    f"{sorted(rows)}; a piece that adds a column that is not one value per row "
                    "must run after this one (or turn shuffle_first_epoch off)"
                )
            order = self._rng.permutation(rows.pop())
            take = functools.partial(_take, order=order)
            batch[module_id] = tree.map_structure(take, module_batch)
        return batch
