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
from rl_bk.methods.bc.cloning import clone_policy, read_bc_data
from rl_bk.methods.bc.settings import BCSettings
from rl_bk.storage import fetch


class BCPPOConfig(BasePPOConfig):
    """RLlib's PPO whose policy is cloned from a ``bc`` artifact before its first sample::

        config = BCPPOConfig().environment(env).training(bc_dir=folder, bc_epochs=20)

    ``folder``: ``rl-bk knowledge build --kinds bc``.
    """

    def __init__(self, algo_class: type | None = None):
        super().__init__(algo_class=algo_class or BCPPO)
        self.bc_dir: str | None = None
        self.bc = BCSettings()

    @override(PPOConfig)
    def training(
        self,
        *,
        bc_dir: str = NotProvided,
        bc: BCSettings = NotProvided,
        **kwargs: Any,
    ) -> BCPPOConfig:
        """
        Args:
            bc_dir: the ``bc`` knowledge artifact (a folder, or a storage URI).
            bc: how the policy is cloned (:class:`~rl_bk.methods.bc.settings.BCSettings`,
                each field's meaning there); any of its fields may also be given by name
                (``training(bc_epochs=5)``).
        """
        self.bc = (self.bc if bc is NotProvided else bc).take_from(kwargs)
        super().training(**kwargs)
        if bc_dir is not NotProvided:
            self.bc_dir = bc_dir
        return self

    @override(PPOConfig)
    def validate(self) -> None:
        super().validate()
        if self.bc_dir is None:
            self._value_error(
                "BCPPOConfig needs training(bc_dir=...): the behaviour-cloning "
                "data (rl-bk knowledge build --kinds bc)"
            )


class BCPPO(PPO):
    @classmethod
    @override(PPO)
    def get_default_config(cls) -> BCPPOConfig:
        return BCPPOConfig()

    @override(PPO)
    def setup(self, config: BCPPOConfig) -> None:
        super().setup(config)
        c = self.config
        data = read_bc_data(fetch(c.bc_dir))
        settings = {
            "epochs": c.bc.bc_epochs,
            "batch_size": c.bc.bc_batch_size,
            "lr": c.bc.bc_lr,
            "holdout": c.bc.bc_holdout,
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
