"""The pandas UDFs of :mod:`simkernel.spark`: SAS scores, reference match, embeddings.

Each factory runs on the driver (it ships the model, see :mod:`simkernel.spark.workers`) and returns a
scalar pandas UDF (``pyspark.sql.functions.pandas_udf``). In a worker, the UDF loads its scorer once per
Python worker and settings, on ``spark.task.cpus`` onnxruntime threads, and scores each Arrow batch with
one call of the same code the Python APIs and ``simkernel score`` use: a row's score depends on its own
texts only, so it is the local engine's, bit for bit, however Spark partitions and batches the rows.

Nulls: a row with a null text (predicted, ground truth, a reference, the text to embed, or an element of
a list of them) or a null list gets a null result, as Spark's own functions do; the other rows of the
batch are scored as usual. A row with an empty list of references scores 0.0 (the metric's result).
"""

from typing import Any

import numpy as np

from simkernel.spark.workers import cached, pyspark_module, ship_model, task_threads, worker_model

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _settings(model: str, precision: str, threads: int | None, ship: bool) -> dict[str, Any]:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be None (spark.task.cpus) or a positive integer, got {threads!r}")
    shipped = ship_model(model, precision) if ship else None
    return {"model": model, "precision": precision, "threads": threads, "shipped": shipped}


def _key(kind: str, settings: dict[str, Any], *extra: Any) -> tuple:
    shipped = settings["shipped"]
    threads = settings["threads"] or task_threads()
    return (
        kind,
        settings["model"],
        settings["precision"],
        threads,
        tuple(sorted((shipped or {}).items())),
        *extra,
    )


def _plain(value: Any) -> Any:
    """A cell as a Python value: arrays (Spark's arrays in pandas) as lists, missing values as None."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return value


def _check_texts(values: list[Any], role: str, lists: bool) -> list[bool]:
    """Which rows hold no null; a value of the wrong type is an error naming the argument and the row."""
    keep = []
    for i, value in enumerate(values):
        if value is None or (lists and isinstance(value, list) and any(v is None for v in value)):
            keep.append(False)
            continue
        ok = isinstance(value, str) or (
            lists and isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            kind = "a text or an array of texts" if lists else "a text"
            raise TypeError(
                f"{role} must be {kind}; row {i} of a batch holds {type(value).__name__} ({value!r})"
            )
        keep.append(True)
    return keep


def _column(series: Any, role: str, lists: bool = False) -> tuple[list[Any], list[bool]]:
    values = [_plain(v) for v in series.tolist()]
    return values, _check_texts(values, role, lists)


def _pandas_udf(function: Any, return_type: str, arguments: tuple[str, ...]) -> Any:
    """``function`` as a scalar pandas UDF (Series in, Series out), its type hints written here so that
    pandas is imported only where a UDF is made."""
    import pandas as pd

    function.__annotations__ = {**dict.fromkeys(arguments, pd.Series), "return": pd.Series}
    return pyspark_module().sql.functions.pandas_udf(function, return_type)


def _scores(n: int, keep: list[bool], values: Any, dtype: str) -> Any:
    """A nullable pandas Series of ``n`` rows: ``values`` at the kept rows, null elsewhere."""
    import pandas as pd

    out = np.zeros(n, dtype=np.float32 if dtype == "Float32" else np.float64)
    mask = ~np.asarray(keep, dtype=bool)
    out[~mask] = np.asarray(values, dtype=out.dtype)
    return pd.Series(pd.arrays.FloatingArray(out, mask))


def sas_udf(
    model: str = DEFAULT_MODEL,
    precision: str = "fp32",
    batch_size: int = 32,
    threads: int | None = None,
    ship: bool = True,
) -> Any:
    """Haystack's semantic answer similarity (``SASEvaluator``): ``sas_udf()(predicted, ground_truth)`` is
    a ``float`` column, the float32 score of each predicted text against its ground truth (a string, or an
    array of correct answers: the best one counts). ``threads``: None uses ``spark.task.cpus``."""
    settings = _settings(model, precision, threads, ship)

    def sas(predicted: Any, ground_truth: Any) -> Any:
        texts, keep_p = _column(predicted, "the predicted texts (first argument)")
        truths, keep_g = _column(ground_truth, "the ground truths (second argument)", lists=True)
        keep = [a and b for a, b in zip(keep_p, keep_g, strict=True)]
        rows = [i for i, k in enumerate(keep) if k]
        scores: list[float] = []
        if rows:
            evaluator = cached(_key("sas", settings, batch_size), lambda: _evaluator(settings, batch_size))
            result = evaluator.run(
                ground_truth_answers=[truths[i] for i in rows], predicted_answers=[texts[i] for i in rows]
            )
            scores = result["individual_scores"]
        return _scores(len(texts), keep, scores, "Float32")

    return _pandas_udf(sas, "float", ("predicted", "ground_truth"))


def _evaluator(settings: dict[str, Any], batch_size: int) -> Any:
    from simkernel.components.evaluators import SASEvaluator

    threads = settings["threads"] or task_threads()
    model = worker_model(settings["model"], settings["precision"], settings["shipped"])
    evaluator = SASEvaluator(
        model=model, batch_size=batch_size, precision=settings["precision"], threads=threads
    )
    evaluator.warm_up()
    return evaluator


def reference_match_udf(
    model: str = DEFAULT_MODEL,
    precision: str = "fp32",
    aggregation: str = "max",
    batch_size: int = 32,
    threads: int | None = None,
    ship: bool = True,
) -> Any:
    """eval_lib's reference match (``ReferenceMatchMetric``): ``reference_match_udf()(output, references)``
    is a ``double`` column, the score of each output text against its array of references (each cosine
    clamped to [0, 1], then ``aggregation`` ``"max"`` or ``"mean"``; an empty array scores 0.0)."""
    if aggregation not in ("max", "mean"):
        raise ValueError(f"aggregation must be 'max' or 'mean', got {aggregation!r}")
    settings = _settings(model, precision, threads, ship)

    def reference_match(output: Any, references: Any) -> Any:
        from simkernel.metrics.scoring import reference_match_scores

        texts, keep_o = _column(output, "the output texts (first argument)")
        refs, keep_r = _column(references, "the references (second argument)", lists=True)
        for i, value in enumerate(refs):
            if keep_r[i] and isinstance(value, str):
                raise TypeError(
                    f"the references (second argument) must be an array of texts; row {i} of a batch holds a string ({value[:60]!r})"
                )
        keep = [a and b for a, b in zip(keep_o, keep_r, strict=True)]
        rows = [i for i, k in enumerate(keep) if k]
        scores: Any = []
        if rows:
            provider = cached(
                _key("reference", settings, batch_size), lambda: _provider(settings, batch_size)
            )
            scores = reference_match_scores(
                provider.embed_sync, [texts[i] for i in rows], [refs[i] for i in rows], aggregation
            )
        return _scores(len(texts), keep, scores, "Float64")

    return _pandas_udf(reference_match, "double", ("output", "references"))


def _provider(settings: dict[str, Any], batch_size: int) -> Any:
    from simkernel.metrics.embedding_providers import LocalEmbeddingProvider

    threads = settings["threads"] or task_threads()
    model = worker_model(settings["model"], settings["precision"], settings["shipped"])
    provider = LocalEmbeddingProvider(
        model, precision=settings["precision"], threads=threads, batch_size=batch_size
    )
    provider.encoder  # noqa: B018 - loads the model now, once per worker
    return provider


def embedding_udf(
    model: str = DEFAULT_MODEL,
    precision: str = "fp32",
    normalize: bool = False,
    batch_size: int = 32,
    threads: int | None = None,
    ship: bool = True,
) -> Any:
    """``embedding_udf()(text)`` is an ``array<float>`` column: the float32 embedding of each text (pooled
    as sentence-transformers pools it; unit length only with ``normalize=True``)."""
    settings = _settings(model, precision, threads, ship)

    def embed(text: Any) -> Any:
        import pandas as pd

        texts, keep = _column(text, "the texts (first argument)")
        rows = [i for i, k in enumerate(keep) if k]
        out: list[Any] = [None] * len(texts)
        if rows:
            encoder = cached(_key("embed", settings), lambda: _encoder(settings))
            vectors = encoder.encode([texts[i] for i in rows], batch_size=batch_size, normalize=normalize)
            for i, vector in zip(rows, np.asarray(vectors, dtype=np.float32), strict=True):
                out[i] = vector
        return pd.Series(out, dtype=object)

    return _pandas_udf(embed, "array<float>", ("text",))


def _encoder(settings: dict[str, Any]) -> Any:
    from simkernel.runtime import get_text_encoder

    threads = settings["threads"] or task_threads()
    model = worker_model(settings["model"], settings["precision"], settings["shipped"])
    return get_text_encoder(model, precision=settings["precision"], threads=threads)
