"""``simkernel score DIR_OR_GLOB --engine ray``: a file set scored by Ray Data on the nodes, written here.

The output is one table (OUT, or stdout) with the rows of the files in sorted order, each file's rows in
file order: byte for byte what the local engine writes for the files concatenated into one. The driver
cuts the scored rows into ``--chunk-rows`` chunks and commits them as for a single file
(:mod:`simkernel.tables.partial`): OUT is replaced only when every row is in, and ``--resume`` goes on after
the committed chunks (the files they cover wholly are checked again for the summary, not scored).

Bad rows: each block is checked on its node before it is scored; the first block with a bad row stops
the run with an error naming the file and the row (counted from 1, without the header), and the
output folder beside OUT is removed: nothing of that run reaches OUT. Written to stdout, the rows printed
before the bad block cannot be taken back: the error says how many there were.
"""

from __future__ import annotations

import itertools
import os
import time
from array import array
from collections.abc import Iterator
from typing import Any

from simkernel.batch.fingerprint import fingerprint
from simkernel.batch.job import ScoreJob
from simkernel.batch.progress import ProgressBar
from simkernel.batch.rows import RowProblems, columns_of
from simkernel.batch.score import output_layout, output_paths
from simkernel.batch.survey import BadInput, Survey, check_table_columns
from simkernel.errors import DataError
from simkernel.ray.file_blocks import ADDED, PATH
from simkernel.tables.chunk import Chunk
from simkernel.tables.file_sets import FileSet, open_file_set
from simkernel.tables.formats import STDIO, table_format
from simkernel.tables.parquet import arrow_rows
from simkernel.tables.partial import PartialOutput, print_notice
from simkernel.tables.table_format import check_output_paths
from simkernel.tables.writers import StdoutOutput


def run_score_files(args: ScoreJob, threshold: float | None, out_format: str | None) -> Any:
    """Score the file set ``args.file``; returns (output, survey, engine, load_s, score_s) for the summary."""
    from simkernel.ray.file_engine import FileSetEngine

    fs = open_file_set(args.file, args.input_format)
    check_output_paths(output_paths(args), fs.files)  # OUT may not be one of the files it reads
    out_format = out_format or fs.format
    columns = columns_of(args)
    check_table_columns(columns, fs.columns, fs.source, args, fs.format)
    schema = table_format(out_format).output_schema(table_format(fs.format), fs.columns, fs.schema)
    layout = output_layout(args, out_format, fs.columns, threshold, schema)
    survey = Survey(columns=dict.fromkeys(fs.columns), labels=array("d") if args.label else None)
    survey.streaming = True
    known = [table_format(fs.format).known_rows(name) for name in fs.files]  # from the files' metadata
    survey.rows_at_most = 0 if None in known else sum(n or 0 for n in known)
    output: StdoutOutput | PartialOutput
    if args.output == STDIO:
        output = StdoutOutput(layout)
    else:
        identity = {**fingerprint(args, fs.files[0], fs.format), **fs.fingerprint()}
        notice = (lambda message: None) if args.quiet else print_notice
        output = PartialOutput(args.output, layout, identity, args.resume, notice)
    engine = FileSetEngine(args, fs, columns)
    load_s = score_s = 0.0
    try:
        started = time.perf_counter()
        engine.load()
        load_s = time.perf_counter() - started
        skip = output.rows_done
        check_only = _scored_before(engine, fs, skip)
        rows_hint = survey.rows_at_most or _rows_hint(fs)
        with ProgressBar(
            survey.rows_at_most, "scoring", enabled=False if args.quiet or not survey.rows_at_most else None
        ) as bar:
            blocks = engine.blocks(check_only, rows_hint)
            for chunk, scores in _chunks(blocks, fs, survey, args, skip):
                output.commit(layout.render(chunk, scores), scores)
                bar.update(len(chunk))
        score_s = time.perf_counter() - started - load_s
        output.finish()
    except BaseException as exc:
        bad_row = isinstance(exc, BadInput) and not output.resumed_rows
        if output.rows_done and not bad_row:
            output.keep_for_resume()
        else:
            output.discard()
        if bad_row and isinstance(output, StdoutOutput) and output.rows_done:
            # the nodes check the rows as they score them: what stdout already got cannot be taken back
            raise BadInput(
                f"{exc}; {output.rows_done} rows were already printed to stdout before it: that output is incomplete, discard it (with --output OUT a bad row leaves OUT untouched)"
            ) from None
        raise
    finally:
        engine.close()
    return output, survey, engine, load_s, score_s


def _scored_before(engine: Any, fs: FileSet, skip: int) -> frozenset[str]:
    """The files wholly within the ``skip`` rows an earlier run committed (checked again, not scored)."""
    if not skip:
        return frozenset()
    done, end = [], 0
    for name, rows in zip(fs.files, engine.row_counts(), strict=True):
        end += rows
        if end > skip:
            break
        done.append(name)
    return frozenset(done)


def _rows_hint(fs: FileSet) -> int:
    """About how many rows the text files hold (their sizes over the first file's bytes per row), only to
    size the blocks."""
    sizes = sum(os.path.getsize(name) for name in fs.files)
    with open(fs.files[0], "rb") as handle:
        head = handle.read(1 << 16)
    per_row = len(head) / max(1, head.count(b"\n"))
    return int(sizes / max(per_row, 1.0))


def _chunks(
    blocks: Iterator[Any], fs: FileSet, survey: Survey, args: ScoreJob, skip: int
) -> Iterator[tuple[Chunk, list[Any]]]:
    """The rows of the scored blocks cut into chunks of ``--chunk-rows`` from row ``skip`` on (every row
    tallied into ``survey``); a bad row raises :class:`BadInput` naming its file and row."""
    import pyarrow as pa

    order = {name: i for i, name in enumerate(fs.files)}
    where = [-1, 0]  # the file now read (its index) and its rows so far
    pending: list[Any] = []
    pending_scores: list[Any] = []
    index = 0  # rows of the input before the pending ones
    chunk_rows = args.chunk_rows
    for block in blocks:
        paths = [_plain_path(p) for p in block.column(PATH).to_pylist()]
        positions = _positions(paths, order, where, fs)
        _raise_bad_rows(block, paths, positions, fs)
        _tally(survey, block)
        data = block.drop_columns([PATH, *ADDED])
        if fs.schema is not None:
            data = pa.Table.from_arrays(data.columns, schema=fs.schema)
        scores = _typed(args.metric, block.column("__score").to_pylist())
        start = 0
        if index < skip:  # rows an earlier run committed: counted, not written again
            start = min(len(scores), skip - index)
            index += start
        if start < len(scores):
            pending.append(data.slice(start))
            pending_scores.extend(scores[start:])
        while len(pending_scores) >= chunk_rows:
            yield _chunk(pa, pending, chunk_rows, index, fs), pending_scores[:chunk_rows]
            table = pa.concat_tables(pending).slice(chunk_rows)
            pending, pending_scores = [table], pending_scores[chunk_rows:]
            index += chunk_rows
    if pending_scores:
        yield _chunk(pa, pending, len(pending_scores), index, fs), pending_scores


def _typed(metric: Any, scores: list[Any]) -> list[Any]:
    """A block's ``__score`` values (float64, a list of them a row for several columns) in the types of
    the metric's columns, as its scorer returned them: ints for int64, a tuple a row for several."""
    kinds = [kind for _, kind in metric.columns]
    if not metric.several_columns:
        return [int(v) for v in scores] if kinds[0] == "int64" else scores
    return [
        tuple(int(v) if kind == "int64" else v for v, kind in zip(row, kinds, strict=True)) for row in scores
    ]


def _chunk(pa: Any, pending: list[Any], rows: int, first: int, fs: FileSet) -> Chunk:
    table = pa.concat_tables(pending).slice(0, rows).combine_chunks()
    return Chunk(
        arrow_rows(table), list(range(first + 1, first + 1 + rows)), first, table if fs.schema else None
    )


def _plain_path(path: str) -> str:
    return os.path.abspath(path.removeprefix("file://"))


def _positions(paths: list[str], order: dict[str, int], where: list[int], fs: FileSet) -> list[int]:
    """Each row's number in its file (from 1), checking that the files come in order, each once."""
    positions = []
    for path, group in itertools.groupby(paths):
        file_index = order.get(path)
        if file_index is None or file_index < where[0]:  # pragma: no cover - Ray Data's promise
            raise DataError(
                f"Ray Data returned the rows of {path} out of order; nothing was written to OUT, run again"
            )
        if file_index != where[0]:
            where[0], where[1] = file_index, 0
        for _ in group:
            where[1] += 1
            positions.append(where[1])
    return positions


def _raise_bad_rows(block: Any, paths: list[str], positions: list[int], fs: FileSet) -> None:
    column = block.column("__problem")
    if column.null_count == len(column):
        return
    messages = column.to_pylist()
    bad = [i for i, message in enumerate(messages) if message is not None]
    first = bad[0]
    problems = RowProblems(paths[first], "row")
    for i in bad:
        if paths[i] == paths[first]:
            problems.add(positions[i], messages[i])
    try:
        problems.raise_if_any()
    except DataError as exc:
        raise BadInput(f"{exc}; nothing was written") from None


def _tally(survey: Survey, block: Any) -> None:
    survey.rows += block.num_rows
    if survey.labels is not None:
        survey.labels.extend(block.column("__label").to_pylist())
    survey.non_latin += sum(block.column("__non_latin").to_pylist())
    survey.no_references += sum(block.column("__no_references").to_pylist())
