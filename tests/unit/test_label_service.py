"""LabelService: the store first, one backend call for the misses, and nothing lost when
part of a batch fails."""

import pytest

from rl_bk.labeling.backends.base import BackendError
from rl_bk.labeling.backends.fake import FakeBackend, FakeGenerator
from rl_bk.labeling.backends.llm import LLMBackend
from rl_bk.labeling.service import LabelService
from rl_bk.labeling.store import LabelStore
from rl_bk.labeling.tasks import HelpfulRequest


def req(caption):
    return HelpfulRequest(caption=caption, task="go to the red ball")


def test_duplicates_and_stored_labels_cost_no_backend_work(tmp_path):
    backend = FakeBackend()
    service = LabelService(backend, LabelStore(tmp_path / "s.sqlite3"))
    first = service.label("helpful", [req("a"), req("b"), req("a")])
    assert first.from_store == [False, False, False] and backend.requests == 2
    second = service.label("helpful", [req("b"), req("c")])
    assert second.from_store == [True, False] and backend.requests == 3
    assert second.labels[0] == first.labels[1]
    restarted = LabelService(FakeBackend(), LabelStore(tmp_path / "s.sqlite3"))
    assert restarted.label("helpful", [req("a")]).from_store == [True]


def test_a_malformed_answer_loses_only_its_own_request(tmp_path):
    # The first request is answered; the second gets garbage twice (answer and retry).
    generator = FakeGenerator(responses=["yes", "garbage", "still garbage"])
    backend = LLMBackend(generator, name="llm", answer_mode="text")
    service = LabelService(backend, LabelStore(tmp_path / "s.sqlite3"))
    with pytest.raises(BackendError, match=r"1 of 2 helpful requests .* \(1 stored\)"):
        service.label("helpful", [req("a red ball"), req("a wall")])
    again = service.label("helpful", [req("a red ball")])
    assert again.from_store == [True] and again.labels[0].helpful is True
    assert service.metrics.backend_errors == 1


def test_stored_reads_the_store_only_and_counts_its_hits(tmp_path):
    from rl_bk.labeling.backends.fake import FakeBackend
    from rl_bk.labeling.service import LabelService
    from rl_bk.labeling.store import LabelStore
    from rl_bk.labeling.tasks import HelpfulRequest

    backend = FakeBackend()
    service = LabelService(backend, LabelStore(tmp_path / "s.db"))
    a, b = HelpfulRequest(caption="a", task="t"), HelpfulRequest(caption="b", task="t")
    service.label("helpful", [a])
    found = service.stored("helpful", [a, b])
    assert found[0] is not None and found[1] is None
    assert backend.batches == 1  # the lookup asked the backend nothing
    assert service.metrics.store_hits == 1
