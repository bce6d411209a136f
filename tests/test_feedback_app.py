"""The Attribute page's relevance feedback and per-query channel caption, under Streamlit's AppTest."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from test_app import app_env, assert_clean, new_app, type_query  # noqa: E402,F401  (app_env: the shared fixture)


def _marks_key(at) -> str:
    (key,) = at.session_state["feedback_marks"].keys() if "feedback_marks" in at.session_state else (None,)
    return key


def _spy_words(monkeypatch) -> list:
    """Record the marked-words reader each re-ranking is given (None: channels only)."""
    from rise_core import attribution

    given, rank = [], attribution.rank_with_feedback

    def spy(*args, **kwargs):
        given.append(kwargs.get("words"))
        return rank(*args, **kwargs)

    monkeypatch.setattr(attribution, "rank_with_feedback", spy)
    return given


@pytest.mark.usefixtures("app_env")
def test_marks_rerank_and_download(monkeypatch):
    given = _spy_words(monkeypatch)
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert any("Channels for this query: leaned on" in c.value for c in at.caption), "the per-query rule says why"
    assert at.button(key="feedback_rerank").disabled  # nothing marked yet
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    last_id = str(first["id"].iloc[-1])
    key = _marks_key(at)
    at.session_state["feedback_marks"][key][last_id] = True  # what ticking "yes" in the editor stores
    at.run()
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    reranked = [d.value for d in at.dataframe if "mark" in d.value.columns and "score" in d.value.columns][-1]
    row = reranked.set_index("id").loc[last_id]
    assert row["mark"] == "yes" and int(row["rank"]) < len(first)  # the confirmed hit moved up
    assert any("Channel weights (z units)" in c.value for c in at.caption)
    # the marked words' reader (the pool's BM25) is given once a row is marked yes: it finds the marked word to lift
    # (its part weighs FeedbackConfig.words, 0 by default: tests/test_marked_words.py covers the part and its line)
    assert given and given[-1] is not None
    assert json.loads(json.dumps(at.session_state["feedback_marks"][key])) == {last_id: True}
    at.button(key="feedback_clear").click().run()
    assert at.session_state["feedback_marks"][key] == {}


@pytest.mark.usefixtures("app_env")
def test_marked_words_are_off_above_the_row_limit(monkeypatch):
    """Above RISE_FEEDBACK_WORDS_MAX_ROWS the marks move the channels only (no BM25 fitted on the pool), and the page
    says so; once BM25 is fitted over the pool on request (the Compare page's offer), the marked words use it."""
    import dataclasses
    import os
    from pathlib import Path

    from explorer_env import INDEX_NAME

    from explorer import resources
    from rise_core.compare import fit_bm25
    from rise_core.store import RiseIndex

    monkeypatch.setenv("RISE_FEEDBACK_WORDS_MAX_ROWS", "1")
    given = _spy_words(monkeypatch)
    resources._kept_pools().clear()  # a BM25 another test fitted would be used
    monkeypatch.setattr(resources, "BM25_FIT", dataclasses.replace(
        resources.BM25_FIT, fit=lambda *a, **k: pytest.fail("BM25 fitted above the limit")))
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.button(key="attribute").click().run()
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    at.session_state["feedback_marks"][_marks_key(at)][str(first["id"].iloc[-1])] = True
    at.run()
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    assert any("the marked words are off for pools over 1 rows" in c.value for c in at.caption)
    reranked = [d.value for d in at.dataframe if "mark" in d.value.columns and "score" in d.value.columns][-1]
    assert "words" not in reranked.columns and given[-1] is None

    path = Path(os.environ["RISE_INDEX_DIR"]) / INDEX_NAME  # BM25 fitted on request, as the Compare page's button does
    with RiseIndex.open(path) as index:
        resources._kept_pools()[(resources.BM25_FIT.name, str(path), resources.pool_stamp(index))] = fit_bm25(index)
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    assert not any("the marked words are off" in c.value for c in at.caption)
    assert given[-1] is not None  # the fitted BM25 reads the marked words
    resources._kept_pools().clear()


def test_the_marked_words_line_lists_the_heaviest_first_and_counts_the_rest():
    """The page's line for the marked words' part (shown where FeedbackConfig.words weighs it)."""
    from explorer.feedback_ui import words_line

    line = words_line({"lumen": 1.0, "**bold**": 0.5, "mouse": 0.25}, limit=2)
    assert line == ("Words of the query your yes-marks hold and your no-marks lack (they rank too): "
                    "lumen (1.00), **bold** (0.50), and 1 more")


@pytest.mark.usefixtures("app_env")
def test_three_misses_keep_the_view_and_the_page_names_the_other_one(monkeypatch):
    """Three "not this" marks on the shown top rows: the re-ranking keeps the view it chose (FeedbackConfig.turn_after
    0: no turn by itself), and the page says where the other view is (the "Looking for" control), in a caption of our
    own words; two misses say nothing yet."""
    from explorer.feedback_ui import ALL_MISSES_HINT
    from rise_core import attribution
    from rise_core.feedback import FeedbackConfig, chosen_view

    assert FeedbackConfig().turn_after == 0
    results, rank = [], attribution.rank_with_feedback

    def spy(*args, **kwargs):
        results.append(rank(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(attribution, "rank_with_feedback", spy)
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.button(key="attribute").click().run()
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    key = _marks_key(at)
    for n, sid in enumerate(first["id"].iloc[:3], start=1):
        at.session_state["feedback_marks"][key][str(sid)] = False
        at.run()
        at.button(key="feedback_rerank").click().run()
        assert_clean(at)
        fb = results[-1].attrs["feedback"]
        assert not fb["turned"] and fb["n_irrelevant"] == n
        assert (ALL_MISSES_HINT in [c.value for c in at.caption]) is (n == 3)
    assert not [t.value for t in at.text if "turned to the other view" in t.value]
    assert any(f"The marks chose {chosen_view(fb['weights'])}." in m.value for m in at.markdown)


@pytest.mark.usefixtures("app_env")
def test_the_lifted_word_can_be_refused_and_lifted_again(monkeypatch):
    """Where a yes-mark lifts a word of the query, "Don't lift this word" refuses it: the next re-ranking's marked
    words lack it and the page says so in plain text; "Lift refused words again" gives it back. (The tiny pool shares
    no rare word with its query, so the lifted word is the first word the marks weigh: `lifted_word` replaced.)"""
    import numpy as np

    from rise_core import feedback

    given = _spy_words(monkeypatch)
    monkeypatch.setattr(feedback, "lifted_word", lambda words, weights, n_rel, n_pool: None if not weights else (
        next(iter(weights)), np.arange(n_pool) == 0))
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.button(key="attribute").click().run()
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    key = _marks_key(at)
    at.session_state["feedback_marks"][key][str(first["id"].iloc[0])] = True
    at.run()
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    lifted = [t.value for t in at.text if "are lifted (in the words column)" in t.value]
    assert len(lifted) == 1
    word = lifted[0].rsplit(": ", 1)[1].strip("'")
    assert word in given[-1].query
    at.button(key="feedback_refuse_word").click().run()
    assert_clean(at)
    assert at.session_state["feedback_refused_words"][key] == {word}
    assert given[-1].refused == {word} and word not in given[-1].query
    assert any(t.value == f"Not lifted, as you asked: {word!r}" for t in at.text)
    assert not any(t.value.endswith(f"{word!r}") and "are lifted" in t.value for t in at.text)
    at.button(key="feedback_unrefuse_words").click().run()
    assert_clean(at)
    assert at.session_state["feedback_refused_words"][key] == set() and word in given[-1].query


def test_the_downloaded_marks_are_what_rise_query_reads(tmp_path):
    """The page's download, with and without refused words, read back by `rise query --marks`'s reader."""
    from explorer.feedback_ui import marks_json
    from rise_core.cli.query import _marks

    marks = {"row-1": True, "row-7": False}
    for refused, words in ((set(), []), ({"first", "cat"}, ["cat", "first"])):
        path = tmp_path / "marks.json"
        path.write_text(marks_json(marks, refused))
        assert _marks(str(path)) == (marks, words)


@pytest.mark.usefixtures("app_env")
def test_once_ranked_again_the_marks_go_on_the_new_ranking():
    """After "Rank again", the mark editor holds the new ranking's rows as the page shows them (the yes rows first,
    then the best unmarked ones, the no rows last), so the next marks go on rows the first ranking did not show, as
    the simulated analyst's do; those rows are among the ids the page accepts marks for. A new mark keeps the ranking
    until the next click."""
    from explorer.feedback_ui import MARKS_CHANGED_CAPTION, SHOWN_ORDER_CAPTION

    at = new_app("app_pages/2_Attribute.py")
    at.session_state["top_k"] = 3
    at = type_query(at)
    at.button(key="attribute").click().run()
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    assert len(first) == 3
    key = _marks_key(at)
    at.session_state["feedback_marks"][key][str(first["id"].iloc[0])] = False
    at.run()
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    assert SHOWN_ORDER_CAPTION in [c.value for c in at.caption]
    reranked = [d.value for d in at.dataframe if "mark" in d.value.columns and "score" in d.value.columns][-1]
    editor = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    assert editor["id"].tolist() == reranked["id"].astype(str).tolist()
    assert editor["mark"].tolist() == ["", "", "", "no"] and editor["id"].iloc[-1] == str(first["id"].iloc[0])
    new_rows = set(editor["id"]) - set(first["id"].astype(str))
    assert new_rows and new_rows <= at.session_state["feedback_shown_ids"][key]  # they may be marked next
    # a mark on the new ranking keeps that ranking (the editor's rows) until the next click, and the page says so
    at.session_state["feedback_marks"][key][str(editor["id"].iloc[0])] = True
    at.run()
    assert_clean(at)
    again = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    assert again["id"].tolist() == editor["id"].tolist() and again["mark"].tolist() == ["yes", "", "", "no"]
    assert MARKS_CHANGED_CAPTION in [c.value for c in at.caption]
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    after = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    assert after["mark"].tolist() == ["yes", "", "", "", "no"]  # the yes row first, 3 unmarked, the no row last
    assert MARKS_CHANGED_CAPTION not in [c.value for c in at.caption]


@pytest.mark.usefixtures("app_env")
def test_the_kept_ranking_is_not_recomputed_on_every_run(monkeypatch):
    """Once ranked again, the page keeps that ranking per query: a run that changes nothing it depends on (a new
    mark before the next click, a touch of another widget) does not rescan the pool; the next click with new marks,
    or another k, does."""
    given = _spy_words(monkeypatch)  # one entry per rank_with_feedback call
    at = new_app("app_pages/2_Attribute.py")
    at.session_state["top_k"] = 3
    at = type_query(at)
    at.button(key="attribute").click().run()
    first = [d.value for d in at.dataframe if "rank" in d.value.columns][0]
    key = _marks_key(at)
    at.session_state["feedback_marks"][key][str(first["id"].iloc[0])] = False
    at.run()
    assert given == []  # nothing ranked with marks before the click
    at.button(key="feedback_rerank").click().run()
    assert len(given) == 1
    shown = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    at.run()
    at.session_state["feedback_marks"][key][str(shown["id"].iloc[0])] = True  # marked, not yet ranked again
    at.run()
    assert_clean(at)
    assert len(given) == 1, "a run that changes nothing the kept ranking depends on rescanned the pool"
    again = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    assert again["id"].tolist() == shown["id"].tolist()  # the kept ranking is still the one shown
    at.button(key="feedback_rerank").click().run()
    assert len(given) == 2
    at.session_state["top_k"] = 4
    at.run()
    assert_clean(at)
    assert len(given) == 3  # another k: ranked again with the same marks
    after = [d.value for d in at.dataframe if list(d.value.columns) == ["id", "mark", "text"]][-1]
    assert after["mark"].tolist() == ["yes", "", "", "", "", "no"]
