"""The file formats of the batch engine: CSV, TSV, JSONL, Parquet, and folders or globs of them.

:mod:`~simkernel.tables.formats` (format names, extensions, the :class:`Chunk` of rows),
:mod:`~simkernel.tables.readers` (streaming readers), :mod:`~simkernel.tables.writers` (streaming
writers), :mod:`~simkernel.tables.parquet` (pyarrow, the ``parquet`` extra), :mod:`~simkernel.tables.partial`
(the resumable output file), :mod:`~simkernel.tables.file_sets` (a folder or glob of files) and
:mod:`~simkernel.tables.whole` (whole small tables).
"""
