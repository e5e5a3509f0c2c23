"""One progress line per trial: a tqdm bar of env steps towards the stop, with the task's main
metric over the trial's last 100 episodes (success, return, achievements or game score) and
its greedy evaluation, in place of Tune's status table (``RLBK_VERBOSE=1`` brings it back).

Tune calls a :class:`ray.tune.Callback` in the driver on every trial event, so the bars cost
nothing on the training path. Off a terminal (a log file, CI) tqdm would write a line per
update; there the bars update at most once a minute.
"""

from __future__ import annotations

import math
import sys

from ray import tune
from tqdm import tqdm

from rl_bk import metrics as M


def _number(result: dict, key: str) -> float:
    """A flattened or nested result key (``a/b`` or ``{"a": {"b": ...}}``); NaN if absent."""
    value = result.get(key)
    if value is None:
        value = result
        for part in key.split("/"):
            value = value.get(part) if isinstance(value, dict) else None
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class EpisodeMean:
    """The mean of a per-iteration episode metric over (at least) the last ``window``
    episodes, each report weighted by the episodes it averages: RLlib's env runners report
    each metric over the episodes that ended in that iteration only (a handful on BabyAI),
    so the raw value jumps between 0 and 1 (``rl_bk.experiments.results`` smooths the same
    way for the tables)."""

    def __init__(self, window: int = M.SMOOTHING_EPISODES) -> None:
        self.window = window
        self.reports: list[tuple[float, float]] = []  # (episodes, value)

    def add(self, episodes: float, value: float) -> float:
        if episodes > 0 and not math.isnan(value):
            self.reports.append((episodes, value))
        total = weighted = 0.0
        for used, (n, v) in enumerate(reversed(self.reports), start=1):
            total, weighted = total + n, weighted + n * v
            if total >= self.window:
                self.reports = self.reports[-used:]  # older reports are never needed again
                break
        return weighted / total if total else math.nan


#: How a line names each task's main metric (``metric:`` of a task file).
SHORT_NAMES = {
    M.SUCCESS_RATE: "success",
    M.EPISODE_RETURN_MEAN: "return",
    M.ACHIEVEMENTS_PER_EPISODE: "achievements",
    M.GAME_SCORE_MEAN: "score",
}


def trial_postfix(result: dict, main: str = M.SUCCESS_RATE, value: float | None = None) -> str:
    """What a trial's line shows after its bar: the task's main metric (``value``, else the
    result's) and, on a success task, greedy-evaluation success, each once reported."""
    shown = []
    value = _number(result, main) if value is None else value
    if not math.isnan(value):
        shown.append(f"{SHORT_NAMES.get(main, main)} {value:.3g}")
    evaluated = _number(result, M.EVAL_SUCCESS_RATE)
    if main == M.SUCCESS_RATE and not math.isnan(evaluated):
        shown.append(f"eval {evaluated:.2f}")
    return " ".join(shown)


class TrialProgress(tune.Callback):
    """A tqdm line per trial, in the order trials start, closed with its final state."""

    def __init__(self, stop_env_steps: int, name_of=str, main: str = M.SUCCESS_RATE) -> None:
        self.stop, self.name_of, self.main = stop_env_steps, name_of, main
        self.bars: dict[str, object] = {}
        self.means: dict[str, EpisodeMean] = {}
        self.reported: set[str] = set()  # trials whose first result has come
        self.interactive = sys.stderr.isatty()

    # ``Tuner.restore`` unpickles the callbacks pickled when the sweep began, perhaps by an
    # older version of this class: keep only the settings, and start with fresh bars for
    # the terminal the resumed run writes to.
    def __getstate__(self) -> dict:
        return {"stop": self.stop, "name_of": self.name_of, "main": self.main}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["stop"], state["name_of"], state["main"])

    def _bar(self, trial):
        if trial.trial_id not in self.bars:
            self.bars[trial.trial_id] = tqdm(
                total=self.stop,
                desc=self.name_of(trial),
                unit=" env steps",
                unit_scale=True,
                # A fixed line per trial on a terminal; in a log, lines one after another
                # (tqdm moves the cursor between positioned bars).
                position=len(self.bars) if self.interactive else None,
                leave=True,
                dynamic_ncols=True,
                mininterval=1.0 if self.interactive else 60.0,
            )
        return self.bars[trial.trial_id]

    def on_trial_start(self, iteration, trials, trial, **info):
        self._bar(trial)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        bar = self._bar(trial)
        steps = _number(result, M.ENV_STEPS)
        if not math.isnan(steps):
            steps = max(0, min(int(steps), self.stop))
            if trial.trial_id in self.reported:
                bar.update(max(0, steps - bar.n))
            else:
                # A trial resumed from a checkpoint reports all its env steps so far at once:
                # the bar starts there, so that its rate and time left count this run's steps.
                self.reported.add(trial.trial_id)
                bar.reset(total=self.stop)
                bar.n = bar.initial = bar.last_print_n = steps
                bar.refresh()
        value = self.means.setdefault(trial.trial_id, EpisodeMean()).add(
            _number(result, M.EPISODES_THIS_ITER), _number(result, self.main)
        )
        bar.set_postfix_str(trial_postfix(result, self.main, value), refresh=False)

    def _close(self, trial, state: str) -> None:
        bar = self._bar(trial)
        bar.set_postfix_str(f"{bar.postfix or ''} [{state}]".strip(), refresh=False)
        bar.close()

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._close(trial, "done")

    def on_trial_error(self, iteration, trials, trial, **info):
        self._close(trial, "ERROR: see the log above")
