"""A sweep whose labellers cannot run here fails before Ray starts, in one line that says
what to do; a sweep without labellers, or with the Serve app labelling, is not held back."""

import sys

import pytest

from env_registry.errors import MissingDependencyError
from rl_bk.experiments.run import check_labelers
from rl_bk.experiments.sweep import expand_variants
from rl_bk.experiments.task_config import load_task


@pytest.fixture
def no_llama_cpp(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp raises ImportError


def test_a_llamacpp_variant_without_llama_cpp_python_fails_with_the_fix(no_llama_cpp):
    task = load_task("crafter-text-ellm")  # ellm x {oracle, llamacpp}
    with pytest.raises(MissingDependencyError, match=r"setup\.sh --with-llm") as err:
        check_labelers(task, expand_variants(task, list(task.methods)))
    assert "needed by ellm backend=llamacpp;" in str(err.value)


def test_sweeps_that_do_not_label_here_pass(no_llama_cpp):
    task = load_task("crafter-text-ellm")
    check_labelers(task, expand_variants(task, ["ppo", "rnd", "ellm-novelty"]))
    oracle = load_task("babyai-gotolocal-redball-s20")  # bk-* with the oracle labeller
    check_labelers(oracle, expand_variants(oracle, list(oracle.methods)))
    served = task.model_copy(update={"labeler": task.labeler.model_copy(update={"mode": "serve"})})
    check_labelers(served, expand_variants(served, list(served.methods)))  # the app's nodes


def test_an_openai_labeller_without_its_server_fails_before_ray(no_llama_cpp):
    task = load_task("babyai-gotolocal-redball-s20")
    labeler = task.knowledge.labeler.model_copy(update={"backend": "openai"})
    knowledge = task.knowledge.model_copy(update={"labeler": labeler})
    task = task.model_copy(update={"knowledge": knowledge})
    with pytest.raises(ValueError, match="needs --base-url and --model"):
        check_labelers(task, expand_variants(task, ["bk-code"]))
