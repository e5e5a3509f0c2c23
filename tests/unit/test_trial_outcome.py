"""What a sweep says of each Tune result: a trial that failed before its first report (in its
setup, say) is still named, from the ``params.json`` Tune wrote in its folder."""

import json

import pytest
from pyarrow.fs import LocalFileSystem
from ray.air.result import Result

from rl_bk import metrics as M
from rl_bk.experiments.results import DONE, ERROR, STOPPED_EARLY
from rl_bk.experiments.run import _result_config, _trial_outcome

CONFIG = {"variant": {"method": "bk-pref", "params": {"include_mission": False}}, "seed": 1}


def _result(tmp_path, metrics, error=None) -> Result:
    (tmp_path / "params.json").write_text(json.dumps(CONFIG))
    return Result(
        metrics=metrics,
        checkpoint=None,
        error=error,
        path=str(tmp_path),
        _storage_filesystem=LocalFileSystem(),
    )


def test_a_trial_that_failed_in_its_setup_is_named_and_its_error_given(tmp_path):
    error = RuntimeError(
        "Traceback ...\nAttributeError: 'LearnerParams' object has no attribute 'num_gpus'\n"
    )
    result = _result(tmp_path, metrics={}, error=error)
    assert result.config is None  # Tune keeps the config with the reports: there are none
    assert _result_config(result) == CONFIG
    status, failure = _trial_outcome(result, stop_steps=500_000)
    assert status == ERROR
    assert failure.title == "bk-pref include_mission=False seed=1"
    assert failure.reason.startswith("AttributeError: 'LearnerParams'")
    assert failure.details == f"traceback: {tmp_path}/error.txt"


@pytest.mark.parametrize(("steps", "status"), [(500_000, DONE), (100_000, STOPPED_EARLY)])
def test_a_trial_that_reported_is_read_from_its_reports(tmp_path, steps, status):
    reported = {**CONFIG, "seed": 2}
    result = _result(tmp_path, metrics={"config": reported, M.ENV_STEPS: steps})
    assert _result_config(result) == reported  # the reports win over params.json
    got, failure = _trial_outcome(result, stop_steps=500_000)
    assert got == status
    assert (failure is None) == (status == DONE)
