"""Errors a user can cause when asking for an environment, each with what to do about it."""

from __future__ import annotations


class UnknownEnvError(KeyError):
    """An env name that is not registered. The message lists the registered names."""

    def __init__(self, name: str, known: list[str]):
        self.name = name
        self.known = known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown environment {self.name!r}; registered: {', '.join(self.known)}"


class MissingDependencyError(ImportError):
    """An optional package (nle, minedojo, ...) or system requirement is missing.

    The message says exactly what to install; callers print it as one line.
    """
