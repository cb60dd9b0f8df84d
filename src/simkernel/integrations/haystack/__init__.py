"""Haystack's embedders and ranker under their former import path (they live in :mod:`simkernel.components`).

``from simkernel.integrations.haystack import SimkernelTextEmbedder`` keeps working: this package re-exports
:class:`~simkernel.components.embedders.SimkernelTextEmbedder`,
:class:`~simkernel.components.embedders.SimkernelDocumentEmbedder`,
:class:`~simkernel.components.rankers.SimkernelSimilarityRanker` and
:data:`~simkernel.components.ALLOWED_MODULES` (the same objects). Its submodules ``embedders`` and ``ranker``
stay because pipelines saved before the move name the classes by them
(``type: simkernel.integrations.haystack.embedders.SimkernelTextEmbedder``); such a file loads with
``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)`` and builds the components' present classes.
New code imports from :mod:`simkernel.components.embedders` and :mod:`simkernel.components.rankers`.
Needs ``pip install 'simkernel[haystack]'``.
"""

from simkernel.components.embedders import SimkernelDocumentEmbedder, SimkernelTextEmbedder
from simkernel.components.rankers import SimkernelSimilarityRanker
from simkernel.components.serialization import ALLOWED_MODULES

__all__ = [
    "ALLOWED_MODULES",
    "SimkernelDocumentEmbedder",
    "SimkernelSimilarityRanker",
    "SimkernelTextEmbedder",
]
