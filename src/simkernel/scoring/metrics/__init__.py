"""The built-in metrics, one module each (:mod:`~simkernel.scoring.metrics.sas`,
:mod:`~simkernel.scoring.metrics.reference`, :mod:`~simkernel.scoring.metrics.exact`): each holds its
scoring functions, its batch scorer and its ``METRIC``, which :mod:`simkernel.scoring.registry` lists."""
