"""Task YAMLs: every shipped task validates; user mistakes get one-line errors naming the fix."""

import pytest

from rl_bk.experiments import task_config
from rl_bk.experiments.task_config import TaskConfigError, available_tasks, load_task


@pytest.mark.parametrize("name", available_tasks())
def test_every_shipped_task_loads_with_and_without_smoke(name):
    full, smoke = load_task(name), load_task(name, smoke=True)
    assert full.name == name and full.description
    assert smoke.stop.num_env_steps <= full.stop.num_env_steps


def test_extends_merges_base_and_smoke_overrides_it():
    task = load_task("babyai-gotolocal-redball-s20")
    assert task.env == "BabyAI-Text-GoToLocal-RedBall-S20-v0"
    assert task.ppo.num_epochs == 4 and task.seeds == [0, 1, 2, 3, 4]
    assert task.ppo.value_loss == "cleanrl"  # the base's, BK's
    smoke = load_task("babyai-gotolocal-redball-s20", smoke=True)
    assert smoke.ppo.num_epochs == 1 and smoke.seeds == [0]
    assert smoke.ppo.lr == task.ppo.lr  # untouched keys keep the base's value


def write(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_unknown_task_lists_the_available_ones():
    with pytest.raises(TaskConfigError, match=r"unknown task 'nope'; available tasks: .*babyai"):
        load_task("nope")


def test_bad_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "description: x\nenv: [unclosed\n")
    with pytest.raises(TaskConfigError, match=r"t.yaml: line \d+ is not valid YAML"):
        load_task(path)


def test_typo_in_a_key_is_an_error_not_a_silent_default(tmp_path):
    path = write(tmp_path, "description: x\nenv: BabyAI-Text-GoToLocal-v0\nppo: {lrr: 0.1}\n")
    with pytest.raises(TaskConfigError, match=r"ppo.lrr: unknown key"):
        load_task(path)


def test_a_moved_key_says_where_it_went(tmp_path):
    text = "description: x\nenv: BabyAI-Text-GoToLocal-v0\noni: {extrinsic_coeff: 0.1}\n"
    with pytest.raises(TaskConfigError, match=r"oni.extrinsic_coeff: moved to ppo.extrinsic_coeff"):
        load_task(write(tmp_path, text))


def test_unknown_env_lists_registered_envs(tmp_path):
    path = write(tmp_path, "description: x\nenv: BabyAI-Nope-v0\n")
    with pytest.raises(TaskConfigError, match="unknown environment 'BabyAI-Nope-v0'; registered:"):
        load_task(path)


def test_wrong_type_is_reported_with_its_path(tmp_path):
    text = "description: x\nenv: BabyAI-Text-GoToLocal-v0\nstop: {num_env_steps: lots}\n"
    path = write(tmp_path, text)
    with pytest.raises(TaskConfigError, match=r"stop\.num_env_steps"):
        load_task(path)


def test_missing_base_and_extends_cycle(tmp_path):
    with pytest.raises(TaskConfigError, match=r"extends 'gone\.yaml', which does not exist"):
        load_task(write(tmp_path, "extends: gone.yaml\n"))
    write(tmp_path, "extends: b.yaml\n", "a.yaml")
    write(tmp_path, "extends: a.yaml\n", "b.yaml")
    with pytest.raises(TaskConfigError, match="cycle"):
        load_task(tmp_path / "a.yaml")


def test_the_learner_uses_one_thread_unless_told():
    from ray.rllib.algorithms.ppo import PPOConfig

    from rl_bk.experiments.ppo_config import learner_threads

    two_runners = PPOConfig().env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5)
    assert learner_threads(two_runners) == 1
    assert learner_threads(two_runners, threads=2) == 2
    assert load_task("crafter-text").learner.threads is None
    # BK's conv network: 2 threads for one trial (bench/results/bk_layout.md)
    assert load_task("babyai-gotolocal-redball-s20").learner.threads == 2


@pytest.mark.parametrize("method", ["ppo", "rnd"])  # every method builds on this base
def test_learner_gpus_reach_rllib_and_the_trials_resource_request(method):
    from rl_bk.methods.registry import get_method

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    assert task.learner.num_gpus == 0  # every committed study updated on the CPU
    on_gpu = task.model_copy(update={"learner": task.learner.model_copy(update={"num_gpus": 1})})
    for t, gpus in ((task, 0), (on_gpu, 1)):
        config = get_method(method).build(t, 0, {})
        assert config.num_gpus_per_learner == gpus and config.num_learners == 0
        bundles = config.algo_class.default_resource_request(config).bundles
        # The learner lives in the trial's own bundle, so the GPU is asked for there.
        assert bundles[0].get("GPU", 0) == gpus
        assert sum(b.get("GPU", 0) for b in bundles[1:]) == 0


def test_a_trial_asking_for_a_gpu_this_machine_lacks_is_refused_before_it_waits():
    from rl_bk.experiments.run import ResourceError, _check_bundles_fit

    task = load_task("babyai-gotolocal-redball-s20", smoke=True)
    bundles = [{"CPU": 1.0, "GPU": 1.0}, {"CPU": 0.5}]
    cpus_only = {"CPU": 2.0}
    with pytest.raises(ResourceError, match=r"ppo trial asks for 1 GPU but.*learner\.num_gpus"):
        _check_bundles_fit(task, "ppo", bundles, cpus_only, on_this_machine=True)
    # On a cluster the autoscaler adds a GPU node when a trial asks for one.
    _check_bundles_fit(task, "ppo", bundles, cpus_only, on_this_machine=False)
    _check_bundles_fit(task, "ppo", bundles, {"CPU": 2.0, "GPU": 1.0}, on_this_machine=True)
    with pytest.raises(ResourceError, match=r"needs 1\.5 CPUs"):
        _check_bundles_fit(task, "ppo", bundles, {"CPU": 1.0, "GPU": 1.0}, on_this_machine=True)


def test_a_familys_own_section_is_checked_by_its_settings_model(tmp_path):
    """A family's section comes from its ``settings.py`` (``TASK_SECTIONS``), with the
    section model's own checks: here ONI's non-negative weight and its unknown keys."""
    base = "description: x\nenv: BabyAI-Text-GoToLocal-v0\n"
    assert load_task(write(tmp_path, base + "oni: {llm_coeff: 0.2}\n")).oni.llm_coeff == 0.2
    with pytest.raises(TaskConfigError, match=r"oni\.llm_coeff"):
        load_task(write(tmp_path, base + "oni: {llm_coeff: -1}\n"))
    with pytest.raises(TaskConfigError, match=r"ellm\.nope: unknown key"):
        load_task(write(tmp_path, base + "ellm: {nope: 1}\n"))


def test_two_families_cannot_claim_one_section(monkeypatch):
    monkeypatch.setattr(task_config, "FAMILIES", ("oni", "oni"))
    with pytest.raises(TypeError, match="section 'oni' is already taken"):
        task_config._family_sections()
