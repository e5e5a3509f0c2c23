"""ONI's learners: PPO's (or APPO's) torch learner, plus fitting the online reward model on the
labels that have arrived after each update, with its own optimiser, outside PPO's loss
(:class:`OnlineRewardModelFitting`, shared by :class:`ONIPPOTorchLearner` and
:class:`ONIAPPOTorchLearner`). By default the fit runs in a background thread, in the time
the learner waits for samples. The schedule, and why the optimiser stays outside:
docs/methods.md#onis-reward-models.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

from rl_bk.algorithms.appo.learner import BaseAPPOTorchLearner
from rl_bk.algorithms.ppo.learner import BasePPOTorchLearner
from rl_bk.methods.oni.rl_module import ONI_MODULE_ID

torch, _ = try_import_torch()

GRAD_CLIP = 10.0


class OnlineRewardModelFitting:
    """What ONI adds to a torch learner (PPO's or APPO's): the reward model's own optimiser,
    and its fit after each update (ONI's schedule: ``reward_model_steps`` steps whenever new
    labels came in while the label set is under ``reward_model_full_until`` labels, one step
    per iteration otherwise).

    The optimiser state is not checkpointed (the weights are, with the module). With
    ``reward_model_in_background`` (the default) the fit starts after an update and is
    published (the weights rewards are scored with) after a later one, so rewards lag the fit
    by an iteration or two; with it off, the fit runs in place and is published at once
    (ONI's way). Logged under ``oni_reward_model/``: ``loss``, ``train_accuracy``,
    ``held_out_accuracy`` (on labels never trained on), ``examples`` and ``gradient_steps``."""

    @override(Learner)
    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        if module_id == ONI_MODULE_ID:
            return  # fitted on labels with its own optimiser (see build)
        super().configure_optimizers_for_module(module_id=module_id, config=config)

    @override(Learner)
    def build(self) -> None:
        super().build()
        self._reward_optimizer = None
        self._reward_rng = np.random.default_rng(0)
        self._reward_steps = 0
        self._fit: threading.Thread | None = None
        self._fit_metrics: dict[str, float] = {}
        if ONI_MODULE_ID in self.module.keys():
            net = self.module[ONI_MODULE_ID].unwrapped().net
            self._reward_optimizer = torch.optim.Adam(
                net.parameters(), lr=self.config.oni.reward_model_lr
            )

    @override(Learner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().after_gradient_based_update(timesteps=timesteps)
        if self._reward_optimizer is None:
            return
        model = self.module[ONI_MODULE_ID].unwrapped()
        if self._fit is not None:
            if self._fit.is_alive():
                return  # still fitting: looked at again after the next update
            self._fit = None
            model.publish()
            self.metrics.log_dict(self._fit_metrics, key=ONI_MODULE_ID, window=1)
        n = model.num_examples
        if n == 0:
            return
        c = self.config.oni
        many = model.new_examples > 0 and n < c.reward_model_full_until
        steps = c.reward_model_steps if many else 1
        model.new_examples = 0
        # A snapshot: the connector appends examples while a background fit runs.
        keys, values = list(model.train_keys[:n]), list(model.train_values[:n])
        if c.reward_model_in_background:
            self._fit = threading.Thread(
                target=self._fit_reward_model,
                args=(model, keys, values, steps),
                daemon=True,
                name="oni-reward-model-fit",
            )
            self._fit.start()
        else:
            self._fit_reward_model(model, keys, values, steps)
            model.publish()
            self.metrics.log_dict(self._fit_metrics, key=ONI_MODULE_ID, window=1)

    def _fit_reward_model(self, model: Any, keys: list, values: list, steps: int) -> None:
        """``steps`` gradient steps on random minibatches of the examples (touches only
        ``model.net`` and its optimiser: safe beside training)."""
        size = min(self.config.oni.reward_model_batch_size, len(keys))
        model.net.train()
        losses, accuracies = [], []
        for _ in range(steps):
            rows = self._reward_rng.choice(len(keys), size=size, replace=False)
            loss, acc = model.loss_on([keys[i] for i in rows], [values[i] for i in rows])
            self._reward_optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.net.parameters(), GRAD_CLIP)
            self._reward_optimizer.step()
            losses.append(float(loss.detach()))
            accuracies.append(acc)
        self._reward_steps += steps
        self._fit_metrics = {
            "loss": float(np.mean(losses)),
            "train_accuracy": _mean_of_numbers(accuracies),
            "held_out_accuracy": model.held_out_accuracy(),
            "examples": float(len(keys)),
            "held_out_examples": float(len(model.held_out)),
            "gradient_steps": float(self._reward_steps),
        }


class ONIPPOTorchLearner(OnlineRewardModelFitting, BasePPOTorchLearner):
    """PPO's torch learner (rl-bk's loss options) that also fits ONI's reward model."""


class ONIAPPOTorchLearner(OnlineRewardModelFitting, BaseAPPOTorchLearner):
    """rl-bk's APPO torch learner that also fits ONI's reward model; its updates, and so the
    fit's start, run in APPO's learner thread."""


def _mean_of_numbers(values: list[float]) -> float:
    """Mean of the values that are not nan (a ranking minibatch of ties has no accuracy)."""
    numbers = [v for v in values if v == v]
    return float(np.mean(numbers)) if numbers else float("nan")
