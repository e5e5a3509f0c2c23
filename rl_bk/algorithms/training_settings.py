"""How the algorithm configs here keep their own ``training(...)`` parameters, and the
settings section a task file gives each method.

RLlib marks a ``training()`` argument the caller left out with ``NotProvided``. Each
``PPOConfig`` subclass keeps its extra parameters' defaults in one dict (set in ``__init__``
with :func:`set_defaults`) and, in ``training()``, sets only the arguments that were given
(:func:`set_provided`, on ``locals()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """A task file's section of one method's settings: unknown keys are errors, and the
    defaults here are the config's defaults (declared once, read by both)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def set_defaults(config: Any, defaults: Mapping[str, Any]) -> None:
    for name, value in defaults.items():
        setattr(config, name, value)


def set_provided(config: Any, arguments: Mapping[str, Any], names: Iterable[str]) -> None:
    """Sets ``config.<name>`` for each of ``names`` whose argument was given."""
    from ray.rllib.utils.from_config import NotProvided  # here: the settings import without Ray
    for name in names:
        value = arguments[name]
        if value is not NotProvided:
            setattr(config, name, value)
