"""Prometheus metrics of the server (``GET /metrics``), on a registry of its own.

- ``simkernel_requests_total{endpoint, method, status}``: requests answered, by route, HTTP method and
  status (``endpoint`` is the path of the app's route the request's path matches, the template for a
  parameterised one, ``/v1/score/{metric}``; ``other`` for a path no route has; ``method`` is ``GET`` or
  ``POST``, else ``other``);
- ``simkernel_request_seconds{endpoint, method}``: latency histogram, from the request's start to its last
  byte;
- ``simkernel_input_tokens_total{model}``: tokens of the texts that requests gave a model, on every route
  that runs one (``rate()`` of it: input tokens/s; see :meth:`ServedModel.input_tokens
  <simkernel.serve.models.ServedModel.input_tokens>`);
- per model, read from its batcher at each scrape: ``simkernel_passes_total``,
  ``simkernel_pass_texts_total`` and ``simkernel_pass_tokens_total`` (forward passes and the distinct
  texts and tokens they ran: their ratios are the mean pass sizes), ``simkernel_queue_depth`` (calls
  waiting for a pass) and ``simkernel_pass_tokens_per_second`` (tokens run by passes since the last
  scrape, per second).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OTHER = "other"  # the label of a path no route has, and of a method the server does not serve
METHODS = ("GET", "POST")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _BatcherCollector:
    """Reads each served model's batcher counters at scrape time."""

    def __init__(self, models) -> None:
        self._models = models
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int]] = {}

    def collect(self):
        passes = CounterMetricFamily("simkernel_passes", "forward passes run", labels=["model"])
        texts = CounterMetricFamily(
            "simkernel_pass_texts", "distinct texts run in forward passes", labels=["model"]
        )
        tokens = CounterMetricFamily(
            "simkernel_pass_tokens", "tokens run in forward passes", labels=["model"]
        )
        depth = GaugeMetricFamily(
            "simkernel_queue_depth", "calls waiting for a forward pass", labels=["model"]
        )
        speed = GaugeMetricFamily(
            "simkernel_pass_tokens_per_second",
            "tokens run per second since the last scrape",
            labels=["model"],
        )
        now = time.monotonic()
        for model in self._models:
            batcher = model.batcher
            if batcher is None:
                continue
            passes.add_metric([model.id], batcher.passes)
            texts.add_metric([model.id], batcher.pass_texts)
            tokens.add_metric([model.id], batcher.pass_tokens)
            depth.add_metric([model.id], batcher.waiting)
            with self._lock:
                then, before = self._last.get(model.id, (now, batcher.pass_tokens))
                self._last[model.id] = (now, batcher.pass_tokens)
            rate = (batcher.pass_tokens - before) / (now - then) if now > then else 0.0
            speed.add_metric([model.id], rate)
        yield from (passes, texts, tokens, depth, speed)


class ServerMetrics:
    def __init__(self, models) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "simkernel_requests",
            "requests answered",
            ["endpoint", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "simkernel_request_seconds",
            "request latency, first byte in to last byte out",
            ["endpoint", "method"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.input_tokens = Counter(
            "simkernel_input_tokens",
            "tokens of the texts requests gave a model",
            ["model"],
            registry=self.registry,
        )
        self.registry.register(_BatcherCollector(models))
        self._routes: list[tuple[re.Pattern[str], str]] = []

    def label_routes(self, routes: Iterable[Any]) -> None:
        """Label requests by the paths of ``routes`` (Starlette routes: ``path``, ``path_regex``)."""
        seen = {path for _, path in self._routes}
        for route in routes:
            if route.path not in seen:
                seen.add(route.path)
                self._routes.append((route.path_regex, route.path))

    def endpoint(self, path: str) -> str:
        """The ``endpoint`` label of a request's ``path``: its route's path (a template), else ``other``."""
        for pattern, label in self._routes:
            if pattern.match(path):
                return label
        return OTHER

    def observe(self, path: str, method: str, status: int, seconds: float) -> None:
        endpoint = self.endpoint(path)
        method = method if method in METHODS else OTHER
        self.requests.labels(endpoint, method, str(status)).inc()
        self.latency.labels(endpoint, method).observe(seconds)

    def count_input(self, model: str, tokens: int) -> None:
        """``tokens`` more input tokens given to ``model``."""
        self.input_tokens.labels(model).inc(tokens)

    def render(self) -> bytes:
        return generate_latest(self.registry)
