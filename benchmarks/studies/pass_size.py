"""CPU time per text of all-MiniLM-L6-v2 passes by pass size, and with widths padded to a multiple of q.

    python benchmarks/studies/pass_size.py

A pass of the batcher (simkernel.runtime.inference.batcher) holds the distinct texts of the calls that
queued together, split into batches of ONE token length (what keeps a text's bits independent of its
batch-mates). This measures the thread CPU time (``time.thread_time``, so a busy machine moves it little)
per text of such passes on one thread, for random samples of the distinct SAS texts: passes of 16, 32 and
64 texts (what a service's concurrent callers make) and of 2,000 (one batched call). ``q > 1`` pads every
text to its length rounded up to a multiple of q: padded alone or in a batch, a text gives the same bits
at a given width, so such buckets would keep the guarantee with fewer, fuller batches; the table shows
whether they pay.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import MODEL_ID, distinct_texts  # noqa: E402


def main() -> None:
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession

    encoder = TextEncoder(MODEL_ID, cache_size=0, batching=False, threads=1)
    tokenizer = encoder._tokenizer
    session = OnnxEncoderSession(encoder._session.path, TOKEN_EMBEDDING_OUTPUTS, threads=1)
    texts = distinct_texts()
    rng = random.Random(0)

    def cost(sample: list[str], q: int, batch_size: int = 32) -> tuple[float, int, int]:
        groups: dict[int, list] = {}
        for enc in tokenizer.encode(sample):
            groups.setdefault(-(-len(enc.ids) // q) * q, []).append(enc)
        start, runs, tokens = time.thread_time(), 0, 0
        for width, encs in groups.items():
            for s in range(0, len(encs), batch_size):
                batch = tokenizer.pad_batch(encs[s : s + batch_size])
                n, w = batch.input_ids.shape
                ids = np.zeros((n, width), np.int64)
                mask = np.zeros((n, width), np.int64)
                ids[:, :w], mask[:, :w] = batch.input_ids, batch.attention_mask
                session.run(ids, mask, np.zeros_like(ids))
                runs, tokens = runs + 1, tokens + n * width
        return time.thread_time() - start, runs, tokens

    print("| texts a pass | width multiple | CPU ms a text | batches a pass | tokens a text |")
    print("|---|---|---|---|---|")
    for size in (16, 32, 64, 2000):
        for q in (1, 4, 8):
            reps = 1 if size == 2000 else 20
            total = [0.0, 0, 0]
            for _ in range(reps):
                for i, v in enumerate(cost(rng.sample(texts, size), q)):
                    total[i] += v
            print(
                f"| {size} | {q} | {total[0] / reps / size * 1000:.3f} | {total[1] / reps:.1f} | "
                f"{total[2] / reps / size:.1f} |"
            )


if __name__ == "__main__":
    main()
