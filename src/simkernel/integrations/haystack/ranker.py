"""The ranker's former module, kept so that ``type: simkernel.integrations.haystack.ranker.<class>`` in a
saved pipeline still loads: importing it registers :mod:`simkernel.components.rankers`' class with Haystack
under that name too."""

from simkernel.components.rankers.similarity_ranker import DEFAULT_RANKER, SimkernelSimilarityRanker

__all__ = ["DEFAULT_RANKER", "SimkernelSimilarityRanker"]
