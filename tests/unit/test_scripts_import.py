"""Every benchmark and study script imports: a script is run rarely, by hand, so a name it
takes from a module that has since changed would otherwise go unnoticed until someone runs it
(bench/labeler.py once imported a probe set that no longer existed)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    f"{folder}.{path.stem}"
    for folder in ("bench", "studies")
    for path in (ROOT / folder).glob("*.py")
    if path.stem != "__init__"
)


def test_the_scripts_are_found():
    assert "bench.labeler" in SCRIPTS and "studies.run" in SCRIPTS


@pytest.mark.parametrize("module", SCRIPTS)
def test_script_imports(module):
    importlib.import_module(module)
