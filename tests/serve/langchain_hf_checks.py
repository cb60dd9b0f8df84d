"""Run in the langchain-hf venv (scripts/tool_venv.sh langchain-hf) by test_serve_tei.py: LangChain's
``HuggingFaceEndpointEmbeddings`` pointed at a running ``simkernel serve`` (its URL as the model, the key
from HUGGINGFACEHUB_API_TOKEN), sync and async. Prints one JSON line of the vectors it got; the test
compares them with the library's in its own session (nothing of simkernel is imported here).

Usage: python langchain_hf_checks.py SERVER_URL TEXTS_JSON
"""

from __future__ import annotations

import asyncio
import json
import sys

from langchain_huggingface import HuggingFaceEndpointEmbeddings


def main() -> None:
    url, texts_path = sys.argv[1], sys.argv[2]
    with open(texts_path, encoding="utf-8") as handle:
        texts = json.load(handle)
    embeddings = HuggingFaceEndpointEmbeddings(model=url)
    result = {
        "documents": embeddings.embed_documents(texts),
        "query": embeddings.embed_query(texts[1]),
        "async_documents": asyncio.run(embeddings.aembed_documents(texts)),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
