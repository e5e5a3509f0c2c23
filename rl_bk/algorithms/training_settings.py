"""The settings section a task file gives each method, whose defaults are also that method's
config's defaults: declared once, as fields of a :class:`SettingsSection`.

A config that takes its section whole (ONI's: ``training(oni=ONISettings(...))``, or any of
its fields by name, ``training(llm_coeff=0.2)``) keeps the object and its parts read it, so a
new setting is one field here plus the line that uses it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """A task file's section of one method's settings: unknown keys are errors, and the
    defaults here are the config's defaults (declared once, read by both)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def updated(self, changes: dict[str, Any]) -> SettingsSection:
        """A copy with ``changes`` in place, validated as the task file's values are."""
        if not changes:
            return self
        return type(self).model_validate({**self.model_dump(), **changes})

    @classmethod
    def take_fields(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Removes this section's fields from ``kwargs`` and returns them (a ``training()``
        that also takes the section's fields by name)."""
        return {name: kwargs.pop(name) for name in list(kwargs) if name in cls.model_fields}
