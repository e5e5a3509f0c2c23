"""The settings section a task file gives each method, whose defaults are also that method's
config's defaults.

Each config reads them explicitly in ``__init__`` (``defaults = ONISettings()``, then
``self.llm_coeff = defaults.llm_coeff``), so a default is declared once and a setting can be
followed by name from the task file to the code that uses it. As in RLlib's own configs,
``training()`` sets each of its extra parameters only when given (not ``NotProvided``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """A task file's section of one method's settings: unknown keys are errors, and the
    defaults here are the config's defaults (declared once, read by both)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
