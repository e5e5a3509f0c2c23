"""The quiet console: RLlib's noise hidden, everything else shown, all of it with
RLBK_VERBOSE=1."""

import logging
import sys
from types import SimpleNamespace

import pytest

from rl_bk import console


@pytest.fixture(autouse=True)
def restore(monkeypatch):
    for name in console.NOISY_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)


def test_rllib_noise_is_hidden_and_other_warnings_are_not(monkeypatch):
    monkeypatch.delenv("RLBK_VERBOSE", raising=False)
    console.quiet_ray_logs()
    noisy = logging.getLogger("ray.rllib.algorithms.algorithm_config")
    assert not noisy.isEnabledFor(logging.WARNING) and noisy.isEnabledFor(logging.ERROR)
    assert logging.getLogger("ray.tune").isEnabledFor(logging.WARNING)


def test_verbose_keeps_everything(monkeypatch):
    monkeypatch.setenv("RLBK_VERBOSE", "1")
    console.quiet_ray_logs()
    assert logging.getLogger("ray._common.deprecation").isEnabledFor(logging.WARNING)
    assert sys.unraisablehook is sys.__unraisablehook__


def test_only_an_actor_teardown_systemexit_is_dropped(monkeypatch):
    shown = []
    monkeypatch.setattr(sys, "__unraisablehook__", shown.append)

    class EnvRunner:
        def __del__(self):
            pass

    teardown = SimpleNamespace(exc_value=SystemExit(0), object=EnvRunner.__del__)
    other = SimpleNamespace(exc_value=ValueError("real"), object=EnvRunner.__del__)
    console._ignore_actor_teardown(teardown)
    console._ignore_actor_teardown(other)
    assert shown == [other]
