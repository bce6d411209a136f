"""The Attribute page's relevance feedback: mark hits "yes, this is it" / "not this", and the ranking finds the rest.

The marks live in the session (per query), can be downloaded as JSON, and re-rank through
`rise_core.attribution.rank_with_feedback` (stored features and, once a hit is marked yes, the marked words over the
pool's BM25: no model run)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
import streamlit as st

from rise_core import attribution
from rise_core.behaviour import features_digest
from rise_core.feedback import MAX_REFUSED_WORDS, FeedbackConfig, all_misses, chosen_view, lift_lines

from . import resources
from .request_limits import FeedbackLimits

MARK_CHOICES = ("", "yes", "no")
EDITOR_KEY = "feedback_editor"  # the mark editor's key is this plus a digest of the query and the rows it shows
MAX_MARKS = 50  # marks per query: 3-5 find the rest (docs/EVALUATION.md); more only lets a client grow the session
MAX_MARKED_QUERIES = 16  # queries whose marks a session keeps (the oldest go first)


def _query_key(query: Any) -> str:
    return json.dumps([getattr(query, "prompt", None), getattr(query, "completion", None), getattr(query, "text", None)])


def _per_query(store: str, query: Any, empty: Any) -> Any:
    """The session's value for `query` in the store named `store` (created as `empty`); the store keeps the last
    MAX_MARKED_QUERIES queries, the oldest going first."""
    by_query = st.session_state.setdefault(store, {})
    key = _query_key(query)
    if key not in by_query:
        while len(by_query) >= MAX_MARKED_QUERIES:
            by_query.pop(next(iter(by_query)))
        by_query[key] = empty
    return by_query[key]


def session_marks(query: Any) -> dict[str, bool]:
    """This query's marks in the session: {sample id: True (relevant) / False (not)}."""
    return _per_query("feedback_marks", query, {})


def refused_words(query: Any) -> set[str]:
    """The query's words the analyst said not to lift in this session (`MarkedWords.without`)."""
    return _per_query("feedback_refused_words", query, set())


def ranked_marks(query: Any) -> dict[str, bool]:
    """The marks this query was last ranked again with ("Rank again with my marks"): the ranking shown stays that
    one while the analyst marks its rows, until the next click."""
    return _per_query("feedback_ranked_marks", query, {})


def shown_ids(query: Any) -> set[str]:
    """The ids this session's page has shown for the query: the only rows that may be marked."""
    return _per_query("feedback_shown_ids", query, set())


def apply_marks(marks: dict[str, bool], edited_ids: Any, edited_marks: Any, shown: set[str]) -> list[str]:
    """Update `marks` from the editor's rows, keeping only rows the page showed and at most MAX_MARKS; returns the
    ids refused (a crafted client can send rows that were never shown)."""
    refused = []
    for sid, mark in zip(edited_ids, edited_marks, strict=True):
        sid = str(sid)
        if sid not in shown:
            refused.append(sid)
        elif mark in ("yes", "no"):
            if sid in marks or len(marks) < MAX_MARKS:
                marks[sid] = mark == "yes"
            else:
                refused.append(sid)
        else:
            marks.pop(sid, None)
    return refused


def marks_json(marks: dict[str, bool], refused: set[str]) -> str:
    """The marks as `rise query --marks` reads them: {id: true/false}, or with the refused words {"marks": {...},
    "not_words": [...]}, so the terminal ranks as the page does."""
    return json.dumps({"marks": marks, "not_words": sorted(refused)} if refused else marks, indent=1)


def words_line(words: dict[str, float], limit: int = 12) -> str:
    """The marked words as one plain line: the query's words your yes-marks hold and your no-marks lack, heaviest
    first (shown with st.text: pool and query text never render as Markdown)."""
    shown = ", ".join(f"{w} ({v:.2f})" for w, v in list(words.items())[:limit])
    more = f", and {len(words) - limit} more" if len(words) > limit else ""
    return f"Words of the query your yes-marks hold and your no-marks lack (they rank too): {shown}{more}"


ALL_MISSES_HINT = ("Your marks so far all say \"not this\". The marks keep the view this ranking chose (turning to "
                   "the other one by itself lost more than it found on the tune sets: docs/EVALUATION.md); to look "
                   "from the other view, choose it under \"Looking for\" above (what taught this behaviour, or "
                   "examples like this one).")
ALL_MISSES_NO_HS = ("Your marks so far all say \"not this\". This index stores no HS channel, so there is no other "
                    "view to try; the λ sliders weigh RH against GH.")


def refuse_controls(query: Any, feedback: dict[str, Any]) -> None:
    """Buttons to refuse the lifted word (a word a yes-mark shares with the query by chance) and to lift refused
    words again. The word comes from the ranking, not the client, and is named by the line above (st.text): button
    labels render Markdown."""
    refused = refused_words(query)
    word = feedback.get("lifted_word")
    c1, c2 = st.columns(2)
    if word and c1.button("Don't lift this word", key="feedback_refuse_word",
                          help="the word above is held by your yes-marks and the query; refuse it when they share "
                               "it by chance", disabled=len(refused) >= MAX_REFUSED_WORDS):
        refused.add(str(word))
        st.rerun()
    if refused and c2.button("Lift refused words again", key="feedback_unrefuse_words"):
        refused.clear()
        st.rerun()


def _words_source(index: Any) -> str:
    """Where the marked words read the pool's BM25: "fitted" (fitted on request on the Compare page, whatever the
    pool's size), "fit here" (a pool small enough to fit it on the server: RISE_FEEDBACK_WORDS_MAX_ROWS) or "off"."""
    if resources.fitted_ready(resources.BM25_FIT, index.path) is not None:
        return "fitted"
    return "fit here" if len(index) <= FeedbackLimits.from_env().words_max_rows else "off"


def _marked_words(index: Any, query: Any, marks: dict[str, bool], source: str) -> tuple[Any, str | None]:
    """The marked words' reader for re-ranking (None: channels only) and, where they are off for the pool's size, the
    caption that says so. They need a yes-mark and the pool's BM25 (`_words_source`; fitted once per index, cached
    until it changes)."""
    if not any(marks.values()):
        return None, None
    if source == "off":
        return None, (f"The marks move the channels only: the marked words are off for pools over "
                      f"{FeedbackLimits.from_env().words_max_rows:,} rows (fitting BM25 on them would hold the server; "
                      "RISE_FEEDBACK_WORDS_MAX_ROWS) until BM25 is fitted over the pool from the Compare page.")
    bm25 = (resources.fitted_ready(resources.BM25_FIT, index.path) if source == "fitted"
            else resources.bm25_for(index.path, asked=True))
    return attribution.marked_words(index, query, bm25, refused_words(query)), None


def _rank_with_marks(index: Any, query: Any, query_fm: Any, options: Any, marks: dict[str, bool], k: int,
                     where: str | None) -> pd.DataFrame:
    """The query ranked again with its marks, as the analyst sees it (`rank_with_feedback`: the rows marked yes, the
    k best unmarked rows, the rows marked no), with the marked words where the pool's BM25 may be read. Kept in the
    session per query until what it depends on changes (the index, the query's features, the options, k, the filter,
    the marks, the refused words, where the marked words read BM25), so a touch of another widget does not rescan the
    pool."""
    source = _words_source(index) if any(marks.values()) else "off"
    key = (resources.pool_stamp(index), features_digest(query_fm), options, k, where,
           tuple(sorted(marks.items())), tuple(sorted(refused_words(query))), source)
    kept = _per_query("feedback_ranked_frame", query, {})
    if kept.get("key") != key:
        words, note = _marked_words(index, query, marks, source)
        kept.clear()
        kept.update(key=key, note=note,
                    frame=attribution.rank_with_feedback(index, query_fm, marks, options, k=k, where=where,
                                                         words=words))
    if kept["note"]:
        st.caption(kept["note"])
    return kept["frame"]


MARKS_CHANGED_CAPTION = "Your marks changed since this ranking: rank again to use them."
SHOWN_ORDER_CAPTION = ("Ranked again with your marks: your \"yes\" rows first, then the best unmarked rows, your "
                       "\"not this\" rows last. Mark the next ones here and rank again.")


def feedback_section(index: Any, query: Any, query_fm: Any, options: Any, hits: pd.DataFrame, k: int,
                     where: str | None = None) -> None:
    """Mark the hits shown, then rank again with the marks (Rocchio per channel + channel re-weighting); once ranked
    again, the marks go on the new ranking's rows, as the simulated analyst's do (docs/EVALUATION.md), and that
    ranking stays until the next click."""
    st.subheader("Is this it? Mark hits and find the rest")
    marks = session_marks(query)
    shown = shown_ids(query)
    shown.update(str(i) for i in hits["id"])
    last = ranked_marks(query)
    if st.session_state.get("feedback_rerank") and marks:  # the click: rank with the marks as they are now
        last.clear()
        last.update(marks)
    ranked = None
    if last:
        ranked = _rank_with_marks(index, query, query_fm, options, dict(last), k, where)
        shown.update(str(i) for i in ranked["id"])  # the re-ranked rows are shown: they may be marked next
    rows = hits if ranked is None else ranked
    if ranked is not None:
        st.caption(SHOWN_ORDER_CAPTION)
    table = pd.DataFrame({"id": rows["id"].astype(str), "mark": [
        "yes" if marks.get(str(i)) is True else "no" if marks.get(str(i)) is False else "" for i in rows["id"]],
        "text": rows.get("completion", rows.get("text", pd.Series([""] * len(rows)))).astype(str).str.slice(0, 160)})
    # The editor keeps its edits by row position, and sends them again on every run: keyed by the query, the rows
    # shown and the clears so far, so that no edit is applied to another query's (or ranking's) rows or outlives
    # Clear marks. The marks themselves live in the session, by id, and fill each new table's mark column.
    clears = st.session_state.setdefault("feedback_clears", 0)
    editor = hashlib.sha256(json.dumps([_query_key(query), list(table["id"]), clears]).encode()).hexdigest()[:12]
    edited = st.data_editor(table, key=f"{EDITOR_KEY}_{editor}", hide_index=True, disabled=["id", "text"],
                            column_config={"mark": st.column_config.SelectboxColumn(
                                "Mark", options=list(MARK_CHOICES),
                                help="yes: this is what I am looking for; no: it is not")})
    if apply_marks(marks, edited["id"], edited["mark"], shown):
        st.warning(f"Some marks were not kept: only rows shown here can be marked, at most {MAX_MARKS} per query.")
    if ranked is not None and marks != last:  # after this run's edits
        st.caption(MARKS_CHANGED_CAPTION)
    c1, c2, c3 = st.columns(3)
    c1.button("Rank again with my marks", key="feedback_rerank", disabled=not marks)
    if c2.button("Clear marks", key="feedback_clear", disabled=not marks):
        marks.clear()
        last.clear()
        _per_query("feedback_ranked_frame", query, {}).clear()
        st.session_state["feedback_clears"] = clears + 1  # a new editor: the old one's edits would mark them again
        st.rerun()
    c3.download_button("Download marks (JSON)", marks_json(marks, refused_words(query)), file_name="marks.json",
                       mime="application/json", key="feedback_download", disabled=not marks)
    st.caption(f"{sum(marks.values())} marked yes, {len(marks) - sum(marks.values())} no; marks are kept for this "
               "session. A simulated analyst reaches the figures in docs/EVALUATION.md with 3 marks.")
    if ranked is None:
        return
    fb = ranked.attrs["feedback"]
    st.markdown(f"**The marks chose {chosen_view(fb['weights'])}.**")
    st.caption("Channel weights (z units) and how far each channel already ranked your yes-marks above your no-marks "
               f"(counted up to ±{FeedbackConfig().max_evidence:g} each way: a few marks cannot hand one channel "
               "everything): "
               + ", ".join(f"{c.upper()} {w:.2f} (evidence {fb['evidence'][c]:+.2f})"
                           for c, w in fb["weights"].items()))
    if fb.get("words"):
        st.text(words_line(fb["words"]))
    for line in lift_lines(fb, len(index)):
        st.text(line)
    if all_misses(marks) and not fb.get("turned"):
        st.caption(ALL_MISSES_HINT if index.config.hidden_channel else ALL_MISSES_NO_HS)
    refuse_controls(query, fb)
    shown_columns = ("rank", "mark", "id", "score", "rh", "gh", "hs", "span", "words", "pseudo", "completion", "text")
    columns = [c for c in shown_columns if c in ranked]
    st.dataframe(ranked[columns], hide_index=True, key="feedback_table")
