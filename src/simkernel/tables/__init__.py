"""The file formats of the batch engine: CSV, TSV, JSONL, Parquet, and folders or globs of them.

One module per format, each a :class:`~simkernel.tables.table_format.TableFormat` holding its reader,
writer, resumable output and column checks: :mod:`~simkernel.tables.delimited` (CSV and TSV),
:mod:`~simkernel.tables.jsonl`, :mod:`~simkernel.tables.parquet` (pyarrow, the ``parquet`` extra);
:mod:`~simkernel.tables.formats` registers them. What does not depend on the format:
:mod:`~simkernel.tables.readers` (opening a table, stdin), :mod:`~simkernel.tables.writers` (the output's
layout, stdout), :mod:`~simkernel.tables.partial` (the resumable output file),
:mod:`~simkernel.tables.file_sets` (a folder or glob of files), :mod:`~simkernel.tables.whole` (whole
small tables), :mod:`~simkernel.tables.chunk` and :mod:`~simkernel.tables.text` (what the text formats
share).
"""
