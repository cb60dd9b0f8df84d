"""The batch engine: a table in, the same table with a score column out, and a summary.

:mod:`~simkernel.batch.job` (the typed :class:`ScoreJob`), :mod:`~simkernel.batch.score` (the run:
checking pass, scoring pass, resumable output), :mod:`~simkernel.batch.rows` (checking rows by the
metric's roles), :mod:`~simkernel.batch.survey`, :mod:`~simkernel.batch.engines` (local, or Ray by name),
:mod:`~simkernel.batch.summary` (its statistics: :mod:`simkernel.stats`); :func:`simkernel.score_file`
(:mod:`~simkernel.batch.api`) is its Python face, ``simkernel score`` its command line;
:func:`simkernel.calibrate_file` (:mod:`~simkernel.batch.calibrate`) is ``simkernel calibrate``'s.
"""
