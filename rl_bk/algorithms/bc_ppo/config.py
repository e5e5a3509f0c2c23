"""BC-PPO's config and algorithm: PPO whose learner's policy is cloned from a ``bc`` artifact
in ``setup``, before the first sample, then synced to the env runners.

RLlib samples with the env runners' weights before its first update, so cloning only the
learner's module would let the first batch come from the untrained policy; the algorithm
syncs right after cloning. The cloning report is logged under ``bc/`` in every result (so the
results tables can show how good the starting policy was).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo import PPO, PPOConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.utils.annotations import override
from ray.rllib.utils.from_config import NotProvided

from rl_bk.algorithms.ppo.config import BasePPOConfig


class BCPPOConfig(BasePPOConfig):
    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or BCPPO)
        self.bc_dir: str | None = None
        self.bc_epochs: int = 20
        self.bc_batch_size: int = 256
        self.bc_lr: float = 1e-3
        self.bc_holdout: float = 0.1

    @override(PPOConfig)
    def training(
        self,
        *,
        bc_dir: str = NotProvided,
        bc_epochs: int = NotProvided,
        bc_batch_size: int = NotProvided,
        bc_lr: float = NotProvided,
        bc_holdout: float = NotProvided,
        **kwargs: Any,
    ) -> BCPPOConfig:
        """
        Args:
            bc_dir: the ``bc`` knowledge artifact (a folder, or a storage URI).
            bc_epochs: passes over the dataset (the epoch with the lowest held-out NLL is
                kept).
            bc_batch_size: state-action pairs per gradient step.
            bc_lr: Adam's learning rate for cloning.
            bc_holdout: fraction of the dataset's episodes held out to choose the epoch and
                report accuracy (0: keep the last epoch).
        """
        super().training(**kwargs)
        if bc_dir is not NotProvided:
            self.bc_dir = bc_dir
        if bc_epochs is not NotProvided:
            self.bc_epochs = bc_epochs
        if bc_batch_size is not NotProvided:
            self.bc_batch_size = bc_batch_size
        if bc_lr is not NotProvided:
            self.bc_lr = bc_lr
        if bc_holdout is not NotProvided:
            self.bc_holdout = bc_holdout
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if self.bc_dir is None:
            self._value_error(
                "BCPPOConfig needs training(bc_dir=...): the behaviour-cloning "
                "data (rl-bk knowledge build --kinds bc)"
            )
        if self.bc_epochs < 1 or self.bc_batch_size < 1 or self.bc_lr <= 0:
            self._value_error("bc_epochs and bc_batch_size must be >= 1 and bc_lr > 0")
        if not 0.0 <= self.bc_holdout < 1.0:
            self._value_error(f"bc_holdout must be in [0, 1), got {self.bc_holdout}")


class BCPPO(PPO):
    @classmethod
    @override(PPO)
    def get_default_config(cls) -> BCPPOConfig:
        return BCPPOConfig()

    @override(PPO)
    def setup(self, config: BCPPOConfig) -> None:
        super().setup(config)
        from rl_bk.algorithms.bc_ppo.cloning import clone_policy, read_bc_data
        from rl_bk.storage import fetch

        c = self.config
        data = read_bc_data(fetch(c.bc_dir))
        settings = {
            "epochs": c.bc_epochs,
            "batch_size": c.bc_batch_size,
            "lr": c.bc_lr,
            "holdout": c.bc_holdout,
            "seed": c.seed or 0,
        }

        def clone(learner, **_):
            return clone_policy(learner.module[DEFAULT_MODULE_ID], *data, **settings)

        # Each learner clones with the same data and seed (remote learners then start equal).
        self._bc_report = next(r.get() for r in self.learner_group.foreach_learner(clone))
        # Sample the first batch with the cloned policy, and evaluate it.
        self.env_runner_group.sync_weights(
            from_worker_or_learner_group=self.learner_group, inference_only=True
        )
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group, inference_only=True
            )

    @override(PPO)
    def training_step(self) -> None:
        super().training_step()
        for key in (
            "held_out_accuracy",
            "held_out_majority_accuracy",
            "held_out_nll",
            "train_accuracy",
            "pairs",
        ):
            value = self._bc_report.get(key)
            if value is not None:
                self.metrics.log_value(("bc", key), float(value), window=1)
