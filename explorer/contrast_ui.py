"""Attribute's "why this and not that" control: another answer B to contrast the query with, so every example is
scored by its score for the query minus its score for B (`attribution.query_features(..., versus=B)`), and the
tokens of B that pull a hit's score down.

The backdoor demo's "Open in Attribute" prefills B with the model's answer to the same prompt without the trigger
(`prefill`); otherwise the analyst types B, or types B's prompt (the query's prompt without the trigger) and lets the
index's model answer it, with the query's generation settings. Everything typed is shown as plain text only."""

from __future__ import annotations

import streamlit as st

from rise_core.errors import InputDataError
from rise_core.samples import Sample
from rise_core.units import one_line

from .plain import md
from .request_limits import request_limits
from .resources import model_for, open_index
from .ui import friendly
from .widgets import session_generation_settings, stream_answer

ON, PROMPT, COMPLETION = "versus_on", "versus_prompt", "versus_completion"
HELP = ("Score each training example by its score for the query minus its score for this other answer (per channel, "
        "with the weights chosen for the query): the examples behind this answer and not the other rank first, those "
        "behind the other rank last. E.g. the model's answer to the same prompt without the trigger.")


def prefill(prompt: str, completion: str) -> None:
    """Fill the other answer in (the demo's answer without the trigger), the contrast left off until ticked."""
    st.session_state.update({ON: False, PROMPT: prompt, COMPLETION: completion})


def versus_inputs(path: str) -> None:
    """An expander with the checkbox that turns the contrast on, the other answer's prompt, a button that lets the
    index's model (at `path`) answer that prompt, and the other answer's completion."""
    filled, max_chars = bool(st.session_state.get(COMPLETION)), request_limits().max_text_chars
    with st.expander("Why this and not that? Contrast with another answer", expanded=filled or bool(
            st.session_state.get(ON))):
        st.checkbox("Contrast the query with the other answer below", key=ON, persist_state="session", help=HELP)
        st.text_area("The other answer's prompt", key=PROMPT, persist_state="session", height=68, max_chars=max_chars,
                     help="Empty: the query's prompt. For a backdoor, the prompt without the trigger.")
        if st.button("Generate the other answer with the model", key="versus_generate",
                     icon=":material/auto_awesome:",
                     help="The index's model answers the prompt above (the query's generation settings); the text "
                     "streams in and you may edit it."):
            with friendly("generate the other answer"):
                generate_other_answer(path)
        st.text_area("The other answer (not this one)", key=COMPLETION, persist_state="session", height=100,
                     max_chars=max_chars,
                     help="The answer to contrast the query with; its tokens pull the scores down.")


def generate_other_answer(path: str) -> None:
    """Fill the other answer with the index's model's answer to the other answer's prompt (streamed as plain text)."""
    prompt = (st.session_state.get(PROMPT) or "").strip()
    if not prompt:
        raise InputDataError("type the other answer's prompt first (e.g. the query's prompt without the trigger): "
                             "the model answers that prompt")
    text = stream_answer(model_for(open_index(path)), prompt, session_generation_settings())
    if not text:
        raise InputDataError("the model generated nothing for this prompt; type the other answer yourself")
    st.session_state[COMPLETION] = text


def is_on() -> bool:
    return bool(st.session_state.get(ON))


def versus_sample(query: Sample | None) -> Sample | None:
    """The other answer B as typed (None when the contrast is off, or there is no query); a warning, and None, when it
    is on but B is empty."""
    if query is None or not is_on():
        return None
    completion = (st.session_state.get(COMPLETION) or "").strip()
    if not completion:
        st.warning("Type the other answer to contrast the query with (or untick the contrast).")
        return None
    prompt = (st.session_state.get(PROMPT) or "").strip() or query.prompt
    return Sample(prompt=prompt or None, completion=completion, id="versus")


def remember_query(key: str, query: Sample | None) -> None:
    """On a page's button: keep the typed query and its other answer under `{key}_query` / `{key}_versus` (read them
    with `remembered`). The contrast asked for but its other answer missing (warned): no query is kept, so nothing
    is ranked rather than the plain query."""
    versus = versus_sample(query)
    st.session_state[f"{key}_versus"] = versus
    st.session_state[f"{key}_query"] = None if is_on() and versus is None else query


def remembered(key: str) -> tuple[Sample | None, Sample | None]:
    """(query, other answer) kept by `remember_query` under `key` (None, None before any)."""
    return st.session_state.get(f"{key}_query"), st.session_state.get(f"{key}_versus")


def caption(versus: Sample) -> None:
    """The line over the table saying the scores are a contrast, and with what."""
    st.caption(f"Contrast: each score is the example's score for this answer minus its score for the other answer "
               f"({md(one_line(versus.completion, 80))}); positive: it drives this answer rather than the other one. "
               "The weights were chosen for this answer and applied to both.")

