"""TextEncoder.encode with SentenceTransformer.encode's arguments, against sentence-transformers itself on
the same checkpoint (within 1e-5), and ``similarity`` against SentenceTransformer.similarity."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from simkernel.runtime import TextEncoder, get_text_encoder

ATOL = 1e-5


@pytest.fixture(scope="module")
def encoder(minilm):
    return get_text_encoder(minilm, threads=2)


def test_sentence_transformers_call_gives_the_same_matrix(encoder, st_model, texts):
    kwargs = dict(batch_size=4, show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True)
    ours = encoder.encode(texts, **kwargs)
    reference = st_model.encode(texts, **kwargs)
    assert isinstance(ours, np.ndarray) and ours.dtype == np.float32 and ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, atol=ATOL)


def test_single_string_gives_one_vector(encoder, st_model):
    ours = encoder.encode("A single sentence.")
    reference = st_model.encode("A single sentence.")
    assert ours.shape == reference.shape == (384,)
    np.testing.assert_allclose(ours, reference, atol=ATOL)


def test_convert_to_numpy_false_gives_a_list_of_rows(encoder, st_model, texts):
    ours = encoder.encode(texts, convert_to_numpy=False)
    reference = st_model.encode(texts, convert_to_numpy=False)
    assert isinstance(ours, list) and len(ours) == len(reference) == len(texts)
    for row, ref in zip(ours, reference, strict=True):
        assert isinstance(row, np.ndarray) and row.shape == tuple(ref.shape) == (384,)
        np.testing.assert_allclose(row, ref.numpy(), atol=ATOL)


def test_convert_to_tensor_is_refused_naming_convert_to_numpy(encoder):
    with pytest.raises(ValueError, match="convert_to_numpy=True"):
        encoder.encode(["x"], convert_to_tensor=True)
    with pytest.raises(ValueError, match="convert_to_numpy=True"):
        asyncio.run(encoder.aencode(["x"], convert_to_tensor=True))


def test_normalize_embeddings_false_is_the_raw_pipeline(checkpoint, tmp_path):
    # a checkpoint without a Normalize module: normalize_embeddings decides the norms, as in ST
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(checkpoint))
    reference = SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension())])
    reference.save(str(tmp_path / "raw"))
    encoder = TextEncoder(tmp_path / "raw", threads=2)
    texts = ["An unnormalised sentence embedding.", "Another one, somewhat longer than the first."]
    raw = reference.encode(texts, normalize_embeddings=False)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)  # the case is not vacuous
    np.testing.assert_allclose(encoder.encode(texts, normalize_embeddings=False), raw, atol=ATOL)
    unit = reference.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(encoder.encode(texts, normalize_embeddings=True), unit, atol=ATOL)
    # simkernel's own spelling and default keep working
    np.testing.assert_allclose(encoder.encode(texts, normalize=False), raw, atol=ATOL)
    np.testing.assert_allclose(encoder.encode(texts), unit, atol=ATOL)
    with pytest.raises(ValueError, match="disagree"):
        encoder.encode(texts, normalize=True, normalize_embeddings=False)


def test_aencode_takes_the_same_arguments(encoder, st_model, texts):
    async def main():
        return (
            await encoder.aencode(texts, batch_size=3, normalize_embeddings=True),
            await encoder.aencode("A single sentence."),
            await encoder.aencode(texts, convert_to_numpy=False),
        )

    matrix, single, rows = asyncio.run(main())
    np.testing.assert_allclose(matrix, st_model.encode(texts), atol=ATOL)
    np.testing.assert_allclose(single, st_model.encode("A single sentence."), atol=ATOL)
    assert isinstance(rows, list) and len(rows) == len(texts)
    np.testing.assert_array_equal(np.stack(rows), matrix)


def test_show_progress_bar_writes_one_line_to_stderr(encoder, texts, capsys):
    encoder.encode(texts, batch_size=4, show_progress_bar=True)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "3/3" in captured.err
    encoder.encode(texts, show_progress_bar=False)
    assert capsys.readouterr().err == ""


def test_similarity_matches_sentence_transformers(encoder, st_model, texts):
    a = encoder.encode(texts[:4])
    b = encoder.encode(texts[3:])
    ours = encoder.similarity(a, b)
    reference = st_model.similarity(st_model.encode(texts[:4]), st_model.encode(texts[3:])).numpy()
    assert ours.shape == reference.shape == (4, len(texts) - 3)
    np.testing.assert_allclose(ours, reference, atol=ATOL)
    # unnormalised and 1-D inputs, and a list of rows, as ST takes them
    scaled = a * np.arange(1, 5, dtype=np.float32)[:, None]
    np.testing.assert_allclose(encoder.similarity(scaled, list(b)), ours, atol=ATOL)
    one = encoder.similarity(a[0], b)
    assert one.shape == (1, len(b))
    np.testing.assert_allclose(one[0], ours[0], atol=ATOL)
