"""The embedders' former module, kept so that ``type: simkernel.integrations.haystack.embedders.<class>`` in
a saved pipeline still loads: importing it registers the classes of
:mod:`simkernel.components.embedders` with Haystack under those names too."""

from simkernel.components.embedders.text_embedders import (
    SimkernelDocumentEmbedder,
    SimkernelTextEmbedder,
    document_text,
)
from simkernel.components.serialization import ALLOWED_MODULES

__all__ = ["ALLOWED_MODULES", "SimkernelDocumentEmbedder", "SimkernelTextEmbedder", "document_text"]
