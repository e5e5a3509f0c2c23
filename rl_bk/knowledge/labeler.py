"""How offline stages ask for labels: one function, ``labeler(task, requests) -> labels``,
backed by the label store and a backend (in process) or by a running labeler app. Shared by
BK's builders (:mod:`rl_bk.algorithms.bk_ppo`) and Motif (:mod:`rl_bk.algorithms.oni_ppo.motif`).

Every label goes through :class:`~rl_bk.labeling.service.LabelService`, so it is stored
under its backend, model and template version and never asked for twice: a re-run of a stage
reads its labels back from the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

Labeler = Callable[[str, Sequence[BaseModel]], list[BaseModel]]

logger = logging.getLogger(__name__)


def label_in_batches(labeler: Labeler, task: str, requests: Sequence[BaseModel], *,
                     batch_size: int, desc: str, unit: str = "request"
                     ) -> list[BaseModel | None]:  # fmt: skip
    """One label per request, asked ``batch_size`` at a time under a progress bar.

    A batch the labeler fails on is retried one request at a time, so one malformed answer
    costs one request; a request that fails alone gets None (the caller drops it).
    """
    from tqdm import tqdm

    labels: list[BaseModel | None] = []
    with tqdm(total=len(requests), desc=desc, unit=unit, leave=False) as bar:
        for start in range(0, len(requests), batch_size):
            batch = list(requests[start : start + batch_size])
            try:
                labels += labeler(task, batch)
            except Exception as err:  # the labeler's errors are backend-specific
                logger.warning("a %s batch failed (%s); retrying one by one", task, err)
                for request in batch:
                    try:
                        labels.append(labeler(task, [request])[0])
                    except Exception as one:
                        logger.warning("dropped a %s request: %s", task, one)
                        labels.append(None)
            bar.update(len(batch))
    return labels


@dataclass
class LocalLabeler:
    """A LabelService in this process: backend from a LabelerConfig, the shared store file."""

    backend: str = "oracle"
    store_path: str | None = None
    packaged: str = "smollm2"
    model_path: str | None = None
    base_url: str | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        from rl_bk.labeling.backends.registry import build_label_service
        from rl_bk.labeling.config import load_labeler_config

        config = load_labeler_config(
            backend=self.backend, packaged=self.packaged, model_path=self.model_path,
            base_url=self.base_url, model=self.model, store_path=self.store_path,
        )  # fmt: skip
        self.service = build_label_service(config)
        self.is_oracle = self.service.backend.is_oracle

    @property
    def identity(self) -> str:
        """backend/model, as results and artifacts name their labels' origin."""
        b = self.service.backend
        return f"{b.name}/{b.model}"

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        return list(self.service.label(task, list(requests)).labels)


class HandleLabeler:
    """The offline stages' labeler when a sweep shares one Serve labeler app: its calls go
    through the app's deployment handle, so the deployment owns the label store and batches
    these calls with the trials'."""

    def __init__(self, app_name: str, timeout_s: float = 600.0):
        from rl_bk.labeling.client import HandleTransport

        self.app_name, self.timeout_s = app_name, timeout_s
        self.transport = HandleTransport(app_name=app_name)
        from ray import serve

        described = serve.get_app_handle(app_name).describe.remote().result(timeout_s=timeout_s)
        self.identity = f"{described['backend']}/{described['model']}"
        self.is_oracle = bool(described["oracle"])

    def __call__(self, task: str, requests: Sequence[BaseModel]) -> list[BaseModel]:
        from rl_bk.labeling.tasks import get_task

        spec = get_task(task)
        reply = self.transport.label(task, [r.model_dump() for r in requests], self.timeout_s)
        return [spec.label.model_validate(x) for x in reply["labels"]]
