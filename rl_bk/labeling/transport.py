"""How a process reaches a running Serve app of rl-bk's: by deployment handle inside the Ray
cluster, or over HTTP from anywhere, one transport type per way, for both the labeler app and
the reward-model app. A transport returns the app's replies as they are and raises on any
failure: what to do about one is its caller's decision (an online label queue retries later;
a knowledge build retries one request at a time).
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx


class Transport(Protocol):
    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict: ...

    def describe(self, timeout_s: float) -> dict: ...

    def score(
        self, name: str, version: str, inputs: list[list[float]], timeout_s: float
    ) -> list[float]: ...


class HandleTransport:
    """The app's ingress deployment through a Serve handle, looked up on first use (a handle
    does not pickle across processes; the app's name does). ``handle``: one already at hand
    (tests, a driver that started the app)."""

    def __init__(self, app_name: str = "labeler", handle: Any = None):
        self.app_name, self._handle = app_name, handle

    @property
    def handle(self) -> Any:
        if self._handle is None:
            from ray import serve  # kept light: an HTTP client needs no Ray

            self._handle = serve.get_app_handle(self.app_name)
        return self._handle

    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict:
        return self.handle.label.remote(task, requests).result(timeout_s=timeout_s)

    def describe(self, timeout_s: float) -> dict:
        return self.handle.describe.remote().result(timeout_s=timeout_s)

    def score(
        self, name: str, version: str, inputs: list[list[float]], timeout_s: float
    ) -> list[float]:
        return self.handle.score.remote(name, version, inputs).result(timeout_s=timeout_s)


class HTTPTransport:
    """The app's HTTP routes (``serve_deployments.http_api``, ``serve_deployments.reward_model``)
    at ``url``; no Ray needed."""

    def __init__(self, url: str = "http://127.0.0.1:8000"):
        self.url = url.rstrip("/")
        self._http = httpx.Client()

    def _reply(self, response: Any) -> Any:
        if response.status_code != 200:
            try:
                message = response.json().get("error", {}).get("message", response.text[:200])
            except ValueError:  # not JSON: a proxy's page, say
                message = response.text[:200]
            raise RuntimeError(f"{self.url} answered {response.status_code}: {message}")
        return response.json()

    def label(self, task: str, requests: list[dict[str, Any]], timeout_s: float) -> dict:
        return self._reply(
            self._http.post(
                f"{self.url}/v1/labels/{task}", json={"requests": requests}, timeout=timeout_s
            )
        )

    def describe(self, timeout_s: float) -> dict:
        return self._reply(self._http.get(f"{self.url}/metrics", timeout=timeout_s))

    def score(
        self, name: str, version: str, inputs: list[list[float]], timeout_s: float
    ) -> list[float]:
        route = f"{self.url}/v1/reward_models/{name}/{version}/score"
        return self._reply(self._http.post(route, json={"inputs": inputs}, timeout=timeout_s))[
            "rewards"
        ]


def transport_to(where: str | Any) -> Transport:
    """``"handle:<app name>"``, an ``http(s)://`` base URL, or a deployment handle."""
    if isinstance(where, str) and where.startswith("handle:"):
        return HandleTransport(app_name=where.split(":", 1)[1])
    if isinstance(where, str):
        if not where.startswith(("http://", "https://")):
            raise ValueError(f"{where!r} is neither 'handle:<app name>' nor an http(s):// URL")
        return HTTPTransport(where)
    return HandleTransport(handle=where)
