"""The lifts after marks (rise_core.feedback): the behaviour test's span lift kept unless the marks reject it, and the
marked word's lift, against dense math and known answers (on a built index: test_behaviour.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rise_core import adaptive
from rise_core.baselines import BM25Scorer
from rise_core.errors import InputDataError
from rise_core.feedback import (
    MAX_REFUSED_WORDS,
    MAX_WORD_SHARE,
    FeedbackConfig,
    MarkedWords,
    SpanLift,
    apply_feedback,
    lift_lines,
    lifted_word,
    span_rejected,
    word_weights,
)
from rise_core.samples import Sample


def _pool() -> list[Sample]:
    """60 rows: 5 hold "lumen" (the trigger), 12 "dragon" (a genre word, over MAX_WORD_SHARE), 2 "zephyr" (rarer
    than lumen, but the no-mark holds it), the rest plain topics."""
    rows = []
    for i in range(60):
        words = [f"topic{i % 7}", "story"]
        if i < 5:
            words.append("lumen")
        if i < 12:
            words.append("dragon")
        if i in (0, 20):
            words.append("zephyr")
        rows.append(Sample(prompt=" ".join(words), completion=f"answer number {i}"))
    return rows


def _words(pool: list[Sample], query: str) -> MarkedWords:
    scorer = BM25Scorer()
    scorer.fit(pool)
    return MarkedWords.from_bm25(scorer, query, lambda r: [pool[i].full_text for i in r])


QUERY = "lumen dragon zephyr story topic0"


def test_the_marked_word_is_the_rarest_word_every_yes_holds_and_no_no_holds():
    """Known answer: lumen (5 of 60 rows) is held by both yes-marks and not the no-mark; story and dragon are held by
    more than MAX_WORD_SHARE of the pool; zephyr is rarer but the no-mark (row 20) holds it; topic0 is held by one
    yes-mark only."""
    pool = _pool()
    words = _words(pool, QUERY)
    held = words.row_words([0, 1, 20])
    weights = word_weights(words.query, held[:2], held[2:])
    found = lifted_word(words, weights, n_relevant=2, n_pool=len(pool))
    assert found is not None and found[0] == "lumen"
    assert found[1].tolist() == [i < 5 for i in range(60)]
    # a word held only by the yes-marks lifts nothing new; one held by over a tenth of the pool is not a trigger
    only = lifted_word(words, {"zephyr": 1.0}, n_relevant=2, n_pool=len(pool))
    assert only is None
    assert lifted_word(words, {"dragon": 1.0}, n_relevant=1, n_pool=len(pool)) is None
    assert 12 > MAX_WORD_SHARE * 60 >= 5
    assert lifted_word(words, {"lumen": 0.5}, n_relevant=1, n_pool=len(pool)) is None  # not held by every yes


def test_the_marked_word_lift_is_its_rows_lifted_by_the_spread():
    """Dense: the total after marks is the channels' (and marked words') total plus word_lift times that total's
    spread on the rows holding the marked word; word_lift 0 leaves it out."""
    pool = _pool()
    words = _words(pool, QUERY)
    rng = np.random.default_rng(0)
    raw = {"x": rng.normal(size=60)}
    table = rng.normal(size=(60, 60))
    fixed = {"x": lambda r: table[r]}
    marks = {0: True, 1: True, 20: False}
    plain = apply_feedback(raw, fixed, marks, {"x": 1.0}, FeedbackConfig(word_lift=0.0, words=0.25), words)
    lifted = apply_feedback(raw, fixed, marks, {"x": 1.0}, FeedbackConfig(word_lift=1.5, words=0.25), words)
    assert plain.lifted_word is None and lifted.lifted_word == "lumen" and lifted.lifted_rows == 5
    held = np.array([i < 5 for i in range(60)], dtype=float)
    np.testing.assert_allclose(lifted.total, plain.total + 1.5 * plain.total.std() * held, rtol=1e-12)
    np.testing.assert_allclose(lifted.parts["words"] - plain.parts["words"], 1.5 * plain.total.std() * held,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sum(lifted.parts.values()), lifted.total, rtol=1e-12)
    # no yes-mark: no marked word
    assert apply_feedback(raw, fixed, {20: False}, {"x": 1.0}, None, words).lifted_word is None
    assert any("'lumen'" in line and "5 rows" in line for line in lift_lines(vars(lifted), 60))


def test_a_refused_word_is_neither_lifted_nor_weighted():
    """Known answer: with "lumen" refused the marks find no other word to lift (zephyr: the no-mark holds it; dragon,
    story: over MAX_WORD_SHARE; topic0: one yes-mark), so the total is exactly the one without the word lift, the
    marked words' part lacks lumen, and the lines say the word was refused. Words the query lacks are ignored."""
    pool = _pool()
    words = _words(pool, QUERY)
    rng = np.random.default_rng(0)
    raw, table = {"x": rng.normal(size=60)}, rng.normal(size=(60, 60))
    fixed = {"x": lambda r: table[r]}
    marks = {0: True, 1: True, 20: False}
    config = FeedbackConfig(word_lift=1.5, words=0.25)
    refused = words.without(["lumen", "absent"])
    assert refused.refused == {"lumen"} and refused.query == words.query - {"lumen"}
    got = apply_feedback(raw, fixed, marks, {"x": 1.0}, config, refused)
    assert got.lifted_word is None and got.lifted_rows == 0 and got.refused_words == ("lumen",)
    assert "lumen" not in got.words and got.words  # topic0 (one yes of two) still weighs
    plain_words = dict(got.words)
    expected = apply_feedback(raw, fixed, marks, {"x": 1.0}, FeedbackConfig(word_lift=0.0, words=0.25),
                              MarkedWords(query=words.query - {"lumen"}, row_words=words.row_words,
                                          score=words.score))
    np.testing.assert_allclose(got.total, expected.total, rtol=1e-12)
    assert expected.words == plain_words
    assert "Not lifted, as you asked: 'lumen'" in lift_lines(vars(got), 60)
    # refusals add up; too many is an error
    assert refused.without(["zephyr"]).refused == {"lumen", "zephyr"}
    with pytest.raises(InputDataError, match="words refused"):
        words.without([f"w{i}" for i in range(MAX_REFUSED_WORDS + 1)])


def _span(held: np.ndarray) -> SpanLift:
    return SpanLift(span="Lumen", held=lambda rows: held[rows],
                    lift=lambda total: adaptive.SPAN_LIFT * float(np.std(total)) * held)


def test_the_span_lift_stays_after_marks_unless_the_marks_reject_it():
    """The span lift stays (its part is span.lift of the total before it) until more marked rows holding the span
    are marked no than yes; then it is off and the result names the rejected span."""
    rng = np.random.default_rng(1)
    raw = {"x": rng.normal(size=30)}
    table = rng.normal(size=(30, 30))
    rows = {"x": lambda r: table[r]}
    held = np.zeros(30, dtype=bool)
    held[[2, 3, 4, 5]] = True
    span = _span(held)
    cfg = FeedbackConfig(word_lift=0.0)
    for marks, rejected in (({}, False), ({2: True}, False), ({2: True, 3: False}, False),
                            ({2: True, 3: False, 4: False}, True), ({9: False}, False), ({3: False}, True)):
        assert span_rejected(span, marks) is rejected
        without = apply_feedback(raw, rows, marks, {"x": 1.0}, cfg)
        got = apply_feedback(raw, rows, marks, {"x": 1.0}, cfg, span=span)
        if rejected:
            np.testing.assert_allclose(got.total, without.total, rtol=1e-12)
            assert got.span is None and got.span_rejected == "Lumen" and "span" not in got.parts
        else:
            lift = adaptive.SPAN_LIFT * without.total.std() * held
            np.testing.assert_allclose(got.total, without.total + lift, rtol=1e-12)
            np.testing.assert_allclose(got.parts["span"], lift, rtol=1e-12)
            assert got.span == "Lumen" and got.span_rejected is None
    lines = lift_lines(vars(apply_feedback(raw, rows, {3: False}, {"x": 1.0}, cfg, span=span)), 30)
    assert len(lines) == 1 and "rejected" in lines[0] and "'Lumen'" in lines[0]


def test_feedback_config_refuses_a_bad_word_lift():
    for bad in (-1.0, float("inf"), "1"):
        with pytest.raises(Exception, match="word_lift"):
            FeedbackConfig(word_lift=bad)
