"""The Attribute page's relevance feedback: mark hits "yes, this is it" / "not this", and the ranking finds the rest.

The marks live in the session (per query), can be downloaded as JSON, and re-rank through
`rise_core.attribution.rank_with_feedback` (stored features only: no model run)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from rise_core import attribution

MARK_CHOICES = ("", "yes", "no")


def _query_key(query: Any) -> str:
    return json.dumps([getattr(query, "prompt", None), getattr(query, "completion", None), getattr(query, "text", None)])


def session_marks(query: Any) -> dict[str, bool]:
    """This query's marks in the session: {sample id: True (relevant) / False (not)}."""
    return st.session_state.setdefault("feedback_marks", {}).setdefault(_query_key(query), {})


def feedback_section(index: Any, query: Any, query_fm: Any, options: Any, hits: pd.DataFrame, k: int,
                     where: str | None = None) -> None:
    """Mark the hits shown, then rank again with the marks (Rocchio per channel + channel re-weighting)."""
    st.subheader("Is this it? Mark hits and find the rest")
    marks = session_marks(query)
    table = pd.DataFrame({"id": hits["id"].astype(str), "mark": [
        "yes" if marks.get(str(i)) is True else "no" if marks.get(str(i)) is False else "" for i in hits["id"]],
        "text": hits.get("completion", hits.get("text", pd.Series([""] * len(hits)))).astype(str).str.slice(0, 160)})
    edited = st.data_editor(table, key="feedback_editor", hide_index=True, disabled=["id", "text"], column_config={
        "mark": st.column_config.SelectboxColumn("Mark", options=list(MARK_CHOICES),
                                                 help="yes: this is what I am looking for; no: it is not")})
    for sid, mark in zip(edited["id"], edited["mark"], strict=True):
        if mark in ("yes", "no"):
            marks[str(sid)] = mark == "yes"
        else:
            marks.pop(str(sid), None)
    c1, c2, c3 = st.columns(3)
    rerank = c1.button("Rank again with my marks", key="feedback_rerank", disabled=not marks)
    if c2.button("Clear marks", key="feedback_clear", disabled=not marks):
        marks.clear()
        st.rerun()
    c3.download_button("Download marks (JSON)", json.dumps(marks, indent=1), file_name="marks.json",
                       mime="application/json", key="feedback_download", disabled=not marks)
    st.caption(f"{sum(marks.values())} marked yes, {len(marks) - sum(marks.values())} no; marks are kept for this "
               "session. A simulated analyst reaches the figures in docs/EVALUATION.md with 3 marks.")
    if not (rerank or st.session_state.get("feedback_shown")) or not marks:
        return
    st.session_state["feedback_shown"] = True
    ranked = attribution.rank_with_feedback(index, query_fm, marks, options, k=k, where=where)
    fb = ranked.attrs["feedback"]
    st.caption("Channel weights (z units) and how far each channel already ranked your yes-marks above your no-marks: "
               + ", ".join(f"{c.upper()} {w:.2f} (evidence {fb['evidence'][c]:+.2f})"
                           for c, w in fb["weights"].items()))
    shown = [c for c in ("rank", "mark", "id", "score", "rh", "gh", "hs", "completion", "text") if c in ranked]
    st.dataframe(ranked[shown], hide_index=True, key="feedback_table")
