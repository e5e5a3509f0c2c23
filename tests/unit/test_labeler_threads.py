"""How many threads the embedded model computes on follows where it runs: a labeller that
shares the trial's two cores gets one (a second would wait on training's threads:
docs/labeler.md#speed), a Serve replica as many as it reserves, and a task or a study's plan
that sets ``n_threads`` always wins."""

from rl_bk.experiments.labelers import app_config, labeler_for
from rl_bk.experiments.task_config import load_task
from studies import trials
from studies.plan import Changes, load_plan


def serve_task(**labeler):
    task = load_task("nethack-score-appo-reward-free")
    section = task.labeler.model_copy(update={"mode": "serve", **labeler})
    return task.model_copy(update={"labeler": section})


def test_a_replica_that_reserves_no_cpu_computes_on_one_thread():
    assert app_config(serve_task(), "llamacpp").n_threads == 1


def test_a_replica_computes_on_the_cpus_it_reserves():
    assert app_config(serve_task(num_cpus=4.0), "llamacpp").n_threads == 4


def test_a_task_that_sets_the_threads_wins_over_the_replicas_share():
    task = serve_task(num_cpus=4.0)
    knowledge = task.knowledge.model_copy(
        update={"labeler": task.knowledge.labeler.model_validate({"n_threads": 3})}
    )
    assert app_config(task.model_copy(update={"knowledge": knowledge}), "llamacpp").n_threads == 3


def test_an_online_labeller_in_the_trials_process_takes_one_thread_an_offline_build_two():
    task = load_task("crafter-text-ellm-reward-free")
    assert labeler_for(task, "llamacpp", online=True).config.n_threads == 1
    assert labeler_for(task, "llamacpp").config.n_threads == 2


def test_a_plan_sets_the_threads_and_keeps_the_rest_of_the_labeller():
    # qwen-ellm: a train batch waits for its suggestions, so the labeller has both cores
    task = trials.plan_tasks(load_plan("qwen-ellm"))["crafter"]
    online = labeler_for(task, "llamacpp", online=True).config
    assert online.n_threads == 2 and online.backend == "llamacpp"
    assert online.packaged == load_task("crafter-text-ellm-reward-free").knowledge.labeler.packaged
    # qwen-oni leaves them alone: its Serve replica shares the trial's cores
    oni = trials.plan_tasks(load_plan("qwen-oni"))["reward-free"]
    assert app_config(oni, "llamacpp").n_threads == 1


def test_a_plan_changing_another_knowledge_field_leaves_the_threads_unset():
    # a merge that re-validated the whole section would mark every field as set, and the
    # online labeller would silently take two threads beside training
    changes = Changes(sections={"knowledge": {"shaping_coeff": 0.5}})
    task = trials.part_task("crafter-text-ellm-reward-free", changes)
    assert task.knowledge.shaping_coeff == 0.5
    assert labeler_for(task, "llamacpp", online=True).config.n_threads == 1
