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

from simkernel.scoring.settings import DEFAULT_MODEL, check_aggregation
from simkernel.spark.workers import (
    cached,
    pyspark_module,
    ship_model,
    ship_token_layers,
    task_threads,
    worker_model,
)


def _check_threads(threads: Any) -> None:
    """Spark's own message for a bad ``threads`` (None means ``spark.task.cpus``)."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be None (spark.task.cpus) or a positive integer, got {threads!r}")


def _settings(model: str, precision: str, threads: int | None, ship: bool) -> dict[str, Any]:
    _check_threads(threads)
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


_SPARK_TYPES = {"float32": "float", "float64": "double", "int64": "long"}  # a metric's score_type in Spark


def _scores(n: int, keep: list[bool], values: Any, score_type: str) -> Any:
    """A nullable pandas Series of ``n`` rows: ``values`` at the kept rows, null elsewhere."""
    import pandas as pd

    out = np.zeros(n, dtype=np.dtype(score_type))
    mask = ~np.asarray(keep, dtype=bool)
    out[~mask] = np.asarray(values, dtype=out.dtype)
    if out.dtype.kind == "i":
        return pd.Series(pd.arrays.IntegerArray(out, mask))
    return pd.Series(pd.arrays.FloatingArray(out, mask))


def _struct(n: int, keep: list[bool], values: Any, columns: Any) -> Any:
    """A pandas DataFrame of ``n`` rows, one nullable column per (suffix, type) of ``columns``: each
    row's tuple of ``values`` at the kept rows, nulls elsewhere (Spark reads it as a struct column)."""
    import pandas as pd

    by_column = [[row[i] for row in values] for i in range(len(columns))]
    return pd.DataFrame(
        {
            suffix: _scores(n, keep, column, kind)
            for (suffix, kind), column in zip(columns, by_column, strict=True)
        }
    )


def metric_udf(metric: str = "sas", *, ship: bool = True, name: str | None = None, **settings: Any) -> Any:
    """Any metric of the scoring core's registry (:func:`simkernel.scoring.metric_names`):
    ``metric_udf("sas")(predicted, target)`` is a column of the metric's scores (``float`` for float32
    scores, ``double`` for float64, ``long`` for int64), ``target`` the metric's target column (a ground
    truth, or an array of them where the metric takes several; an array of references). A metric that
    adds several columns gives a struct column, one field per column named by its suffix
    (``metric_udf("bertscore")(p, t).F``); a row with a null text gets nulls in every field. ``settings``
    are :class:`~simkernel.scoring.ScoringSettings` fields; ``threads`` None uses ``spark.task.cpus``;
    ``name`` is the UDF's name in Spark's column names (default: the metric's)."""
    from simkernel.scoring.registry import get_metric
    from simkernel.scoring.settings import ScoringSettings

    _check_threads(settings.get("threads"))
    chosen = get_metric(metric)
    metric_name = chosen.name  # the workers look the metric up by name (a plugin's is found there too)
    checked = ScoringSettings.from_options(**settings)
    shipped = None
    if ship and chosen.loads_model:
        shipper = ship_token_layers if chosen.token_layers else ship_model
        shipped = shipper(checked.model, checked.precision)
    options = {"model": checked.model, "precision": checked.precision, "threads": checked.threads}
    key_settings = {**options, "shipped": shipped}
    target, score_type = chosen.target, chosen.score_type
    role = "references" if target == "references" else "ground truths"
    lists = target == "references" or chosen.several_targets
    first_argument = "output" if target == "references" else "predicted"
    first = f"the {first_argument} texts (first argument)"

    def score(predicted: Any, targets: Any) -> Any:
        texts, keep_p = _column(predicted, first)
        values, keep_t = _column(targets, f"the {role} (second argument)", lists=lists)
        if target == "references":
            for i, value in enumerate(values):
                if keep_t[i] and isinstance(value, str):
                    raise TypeError(
                        f"the references (second argument) must be an array of texts; row {i} of a batch holds a string ({value[:60]!r})"
                    )
        keep = [a and b for a, b in zip(keep_p, keep_t, strict=True)]
        rows = [i for i, k in enumerate(keep) if k]
        scores: Any = []
        if rows:
            key = _key(metric_name, key_settings, repr(sorted(checked.as_dict().items())))
            scorer = cached(key, lambda: _scorer(metric_name, checked, shipped))
            scores = scorer.score([texts[i] for i in rows], [values[i] for i in rows])
        if chosen.several_columns:
            return _struct(len(texts), keep, scores, chosen.columns)
        return _scores(len(texts), keep, scores, score_type)

    score.__name__ = score.__qualname__ = name or chosen.name
    if chosen.several_columns:
        fields = ", ".join(f"{suffix}: {_SPARK_TYPES[kind]}" for suffix, kind in chosen.columns)
        return _pandas_udf(score, f"struct<{fields}>", ("predicted", "targets"))
    return _pandas_udf(score, _SPARK_TYPES[chosen.score_type], ("predicted", "targets"))


def _scorer(name: str, settings: Any, shipped: dict[str, Any] | None) -> Any:
    """The scorer of the metric ``name`` in this worker: on ``spark.task.cpus`` threads unless set, the
    shipped model."""
    from dataclasses import replace

    from simkernel.scoring.registry import get_metric

    metric = get_metric(name)
    if metric.loads_model:
        threads = settings.threads or task_threads()
        model = worker_model(settings.model, settings.precision, shipped)
        settings = replace(settings, model=model, threads=threads)
    scorer = metric.scorer(settings)
    scorer.load()  # once per worker
    return scorer


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
    return metric_udf(
        "sas", ship=ship, model=model, precision=precision, batch_size=batch_size, threads=threads
    )


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
    check_aggregation(aggregation)  # before the threads, as this factory always checked them
    return metric_udf(
        "reference",
        ship=ship,
        name="reference_match",
        model=model,
        precision=precision,
        aggregation=aggregation,
        batch_size=batch_size,
        threads=threads,
    )


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
