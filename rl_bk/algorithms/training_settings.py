"""The settings section a task file gives each method, whose defaults are also that method's
config's defaults: declared once, as fields of a :class:`SettingsSection`.

A config that takes its section whole (ONI's: ``training(oni=ONISettings(...))``, or any of
its fields by name, ``training(llm_coeff=0.2)``) keeps the object and its parts read it, so a
new setting is one field here plus the line that uses it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict


class SettingsSection(BaseModel):
    """A task file's section of one method's settings: unknown keys are errors, and the
    defaults here are the config's defaults (declared once, read by both)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def updated(self, changes: dict[str, Any]) -> Self:
        """A copy with ``changes`` in place, validated as the task file's values are."""
        if not changes:
            return self
        return type(self).model_validate({**self.model_dump(), **changes})

    #: fields a ``training()`` call cannot take by name (they clash with RLlib's own arguments)
    not_by_name: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def take_fields(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Removes this section's fields from ``kwargs`` and returns them (a ``training()``
        that also takes the section's fields by name)."""
        names = [n for n in kwargs if n in cls.model_fields and n not in cls.not_by_name]
        return {name: kwargs.pop(name) for name in names}

    def take_from(self, kwargs: dict[str, Any]) -> Self:
        """A copy with the fields ``kwargs`` names taken out of it and put in place: what a
        config's ``training(section=..., **kwargs)`` keeps, before it hands the rest of
        ``kwargs`` to RLlib's ``training()``."""
        return self.updated(self.take_fields(kwargs))
