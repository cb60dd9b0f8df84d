"""Prometheus metrics of the server (``GET /metrics``), on a registry of its own.

- ``simkernel_requests_total{endpoint, status}``: requests answered, by endpoint and HTTP status
  (``endpoint`` is one of the server's paths, or ``other``);
- ``simkernel_request_seconds{endpoint}``: latency histogram, from the request's start to its last byte;
- ``simkernel_input_tokens_total{model}``: tokens of the embedded inputs (``rate()`` of it: tokens/s);
- per model, read from its batcher at each scrape: ``simkernel_passes_total``,
  ``simkernel_pass_texts_total`` and ``simkernel_pass_tokens_total`` (forward passes and the distinct
  texts and tokens they ran: their ratios are the mean pass sizes), ``simkernel_queue_depth`` (calls
  waiting for a pass) and ``simkernel_pass_tokens_per_second`` (tokens run by passes since the last
  scrape, per second).
"""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENDPOINTS = (
    "/v1/embeddings",
    "/similarity",
    "/rerank",
    "/v1/sas",
    "/v1/reference-match",
    "/v1/models",
    "/health",
    "/ready",
    "/metrics",
)
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
            "simkernel_requests", "requests answered", ["endpoint", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "simkernel_request_seconds",
            "request latency, first byte in to last byte out",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.input_tokens = Counter(
            "simkernel_input_tokens", "tokens of the embedded inputs", ["model"], registry=self.registry
        )
        self.registry.register(_BatcherCollector(models))

    def observe(self, path: str, status: int, seconds: float) -> None:
        endpoint = path if path in ENDPOINTS else "other"
        self.requests.labels(endpoint, str(status)).inc()
        self.latency.labels(endpoint).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
