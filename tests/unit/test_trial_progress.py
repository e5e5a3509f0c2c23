"""One progress line per trial: env steps towards the stop, the latest success and greedy
evaluation, and how the trial ended."""

import pickle
from types import SimpleNamespace

from rl_bk import metrics as M
from rl_bk.experiments.progress import EpisodeMean, TrialProgress, trial_postfix


def _trial(trial_id: str, seed: int) -> SimpleNamespace:
    return SimpleNamespace(trial_id=trial_id, config={"seed": seed})


def test_postfix_shows_the_main_metric_and_eval_once_reported():
    assert trial_postfix({}) == ""
    assert trial_postfix({M.GAME_SCORE_MEAN: 41.25}, M.GAME_SCORE_MEAN) == "score 41.2"
    # Tune's results are nested dicts; greedy evaluation only on a success task.
    nested = {
        "env_runners": {"success_rate": 0.625, "episode_return_mean": 0.5},
        "evaluation": {"env_runners": {"success_rate": 0.5}},
    }
    assert trial_postfix(nested) == "success 0.625 eval 0.50"
    assert trial_postfix(nested, M.EPISODE_RETURN_MEAN) == "return 0.5"


def test_one_line_per_trial_follows_env_steps_and_ends_with_its_state():
    progress = TrialProgress(1000, lambda t: f"ppo seed={t.config['seed']}")
    a, b = _trial("a", 0), _trial("b", 1)
    progress.on_trial_start(0, [a], a)
    progress.on_trial_result(
        1, [a], a, {M.ENV_STEPS: 400, M.SUCCESS_RATE: 0.25, M.EPISODES_THIS_ITER: 4}
    )
    progress.on_trial_result(2, [a, b], b, {M.ENV_STEPS: 300})
    progress.on_trial_result(
        3, [a], a, {M.ENV_STEPS: 1200, M.SUCCESS_RATE: 1.0, M.EPISODES_THIS_ITER: 4}
    )
    bar_a, bar_b = progress.bars["a"], progress.bars["b"]
    assert (bar_a.n, bar_b.n) == (1000, 300)  # capped at the stop
    assert bar_a.desc.startswith("ppo seed=0") and bar_b.desc.startswith("ppo seed=1")
    progress.on_trial_complete(4, [a, b], a)
    progress.on_trial_error(5, [a, b], b)
    assert bar_a.postfix.endswith("[done]") and "success 0.625" in bar_a.postfix  # (1 + .25) / 2
    assert "ERROR" in bar_b.postfix


def test_a_resumed_trial_counts_only_this_runs_env_steps_towards_its_rate():
    progress = TrialProgress(1_000_000, str)
    a = _trial("a", 0)
    progress.on_trial_start(0, [a], a)
    # Its first report after a resume already holds the 600k env steps of the run before.
    progress.on_trial_result(1, [a], a, {M.ENV_STEPS: 600_000})
    progress.on_trial_result(2, [a], a, {M.ENV_STEPS: 610_000})
    bar = progress.bars["a"]
    assert (bar.n, bar.format_dict["initial"]) == (610_000, 600_000)
    # A fresh trial's first report is its first iteration: the bar starts there.
    b = _trial("b", 1)
    progress.on_trial_result(3, [a, b], b, {M.ENV_STEPS: 1_024})
    assert (progress.bars["b"].n, progress.bars["b"].initial) == (1_024, 1_024)


def test_a_resumed_sweep_unpickles_its_callback_from_an_older_version_with_fresh_bars():
    # ``Tuner.restore`` unpickles the callback pickled when the sweep began; the object then
    # held only what that version's ``__init__`` set (here: before ``reported`` existed).
    older = {
        "stop": 1_000,
        "name_of": str,
        "main": M.SUCCESS_RATE,
        "bars": {},
        "means": {},
        "interactive": True,
    }
    progress = TrialProgress.__new__(TrialProgress)
    progress.__setstate__(older)
    a = _trial("a", 0)
    progress.on_trial_result(1, [a], a, {M.ENV_STEPS: 600})
    assert progress.bars["a"].n == 600
    # Pickled mid-run, it keeps its settings and none of its bars.
    again = pickle.loads(pickle.dumps(progress))
    assert (again.stop, again.main, again.bars, again.reported) == (
        1_000,
        M.SUCCESS_RATE,
        {},
        set(),
    )


def test_success_is_the_mean_over_the_last_window_of_episodes():
    mean = EpisodeMean(window=10)
    assert mean.add(4, 0.25) == 0.25
    assert mean.add(0, float("nan")) == 0.25  # an iteration without episodes changes nothing
    assert mean.add(6, 0.5) == (4 * 0.25 + 6 * 0.5) / 10
    # Whole reports until the window is full: 8 episodes at 1.0 and the 6 before them.
    assert mean.add(8, 1.0) == (6 * 0.5 + 8 * 1.0) / 14
    # One episode a report (NetHack): the window still spans its 10 latest episodes.
    for _ in range(30):
        last = mean.add(1, 0.0)
    assert last == 0.0 and len(mean.reports) == 10
