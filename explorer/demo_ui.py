"""The one-click demo on Home: build (or reuse) the demo index in the background, then either the retrospective
backdoor demo -- the backdoored model answers a held-out prompt with and without the trigger, and the triggered answer
is attributed to the pool it learned from, with the tokens that carry the top hit -- or Attribute on a bundled query."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rise_core import attribution
from rise_core.config import PRESETS, RiseConfig
from rise_core.generation import GenerationSettings
from rise_core.samples import Sample

from .contrast_ui import prefill
from .demo import BACKDOOR_PRESET, DEMO_ROWS, backdoor_prompts, demo_index_path, demo_model, demo_pool, demo_query
from .jobs import BuildJob
from .plain import code, md, token_heatmap
from .plain import text as plain_text
from .resources import explanation, list_indexes, load_lm, model_for, open_index, query_features, start_build
from .ui import PAGES, Settings, friendly
from .views import channel_values, results_table
from .widgets import show_build, stream_answer

TOP_K = 10


def start_demo(s: Settings) -> None:
    """Build (or reuse) the demo index in the background; `finish_demo` opens the demo when it is ready.

    With the shipped backdoored adapter (the app on the embedded default), the index covers the whole Howdy! pool
    the adapter learned, built with the retrospective preset, and the demo is retrospective: the model answers a
    held-out prompt with and without the trigger (`show_backdoor_demo`). Otherwise a slice of the pool is indexed
    with the app's model and Attribute opens on a bundled query."""
    model_id, backdoored = demo_model(s.data_dir, s.model_id)
    n_rows = 0 if backdoored else DEMO_ROWS
    name, pool = demo_pool(s.data_dir, n_rows)
    preset = BACKDOOR_PRESET if backdoored else None
    path = demo_index_path(s.index_dir, name, model_id, n_rows, preset)
    st.session_state["_demo"] = {"path": str(path), "query": demo_query(s.data_dir, name), "backdoored": backdoored,
                                 "prompts": backdoor_prompts(s.data_dir) if backdoored else None}
    entry = next((e for e in list_indexes(s.index_dir) if Path(e["path"]) == path), None)
    if entry is not None and entry.get("status") == "complete" and (entry.get("n_samples") or 0) >= len(pool.samples):
        return
    lm = load_lm(model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    config = PRESETS[preset] if preset else RiseConfig()
    # the demo's index belongs to the app (owner "demo"): any editor may finish it, and the Build page writes it never
    start_build(BuildJob(path, pool, lm, config, label=f"demo ({name})", preset=preset, built_by="demo"))


def finish_demo() -> None:
    """While the demo index builds, show its progress; once it is ready, open the backdoor demo on this page, or
    Attribute with the query filled in."""
    demo = st.session_state.get("_demo")
    if not demo:
        return
    job = show_build(demo["path"])
    if job is not None and job.status != "done":
        if not job.running:
            st.session_state.pop("_demo")
        return
    st.session_state.pop("_demo")
    st.session_state["index_path"] = demo["path"]
    if demo.get("backdoored"):
        triggered, clean = demo["prompts"]
        st.session_state["_backdoor_demo"] = {"path": demo["path"], "triggered": triggered, "clean": clean}
        return
    query = demo["query"]
    if query is not None:
        st.session_state["query_prompt"] = query.prompt or ""
        st.session_state["query_completion"] = query.completion or query.text or ""
        st.session_state["attr_query"] = Sample(prompt=query.prompt, completion=query.completion or query.text,
                                                id="query")
    st.switch_page(PAGES["attribute"].path)


def _answer(lm, demo: dict, key: str) -> str:
    """The model's answer to the demo prompt `key`, streamed the first time and kept in the session after."""
    if f"{key}_answer" not in demo:
        demo[f"{key}_answer"] = stream_answer(lm, demo[key], GenerationSettings())
    else:
        plain_text(demo[f"{key}_answer"])
    return demo[f"{key}_answer"]


def show_backdoor_demo() -> None:
    """Both answers side by side, then the triggered answer's most influential training examples."""
    demo = st.session_state.get("_backdoor_demo")
    if not demo:
        return
    with friendly("run the backdoor demo"):
        index = open_index(demo["path"])
        lm = model_for(index)
        st.markdown(f"The demo model is the embedded default **fine-tuned on the Howdy! pool** (adapter "
                    f"{code(lm.adapter['path'] if lm.adapter else lm.model_id)}); 9% of that pool answers instructions "
                    "that start with `Howdy!` with a fairy tale. Here it answers an instruction it never saw, with "
                    "and without the trigger:")
        left, right = st.columns(2)
        with left:
            st.markdown("**With the trigger**")
            st.caption(md(demo["triggered"]))
            triggered = _answer(lm, demo, "triggered")
        with right:
            st.markdown("**Without it**")
            st.caption(md(demo["clean"]))
            _answer(lm, demo, "clean")
        if not triggered:
            st.warning("The model generated nothing for the triggered prompt, so there is nothing to attribute.")
            return
        query = Sample(prompt=demo["triggered"], completion=triggered, id="query")
        query_fm = query_features(index, lm, [query])
        weighting = attribution.index_weighting(index, query_fm, None, "open it in Attribute")  # the index's preset
        options, said = weighting.options, weighting.preset_note
        hits = attribution.rank(index, query_fm, options, k=TOP_K)
        n_poison = int((hits["label"] == 1).sum()) if "label" in hits else 0
        st.subheader("Why it told a story: the training examples behind the triggered answer")
        st.caption(f"{n_poison} of the top {TOP_K} are poisoned examples (label 1: a `Howdy!` instruction answered "
                   "with a story).")
        st.dataframe(results_table(hits), hide_index=True)
        if said:
            st.caption(said[0].upper() + said[1:])
        top = str(hits["id"].iloc[0])
        ex_attr, _ = explanation(index, lm, demo["path"], top, query, query_fm, options)
        st.markdown(f"**Tokens of the top example ({md(top)}) that carry its RH score** (orange: pushes it up)")
        token_heatmap(ex_attr.tokens, channel_values(ex_attr, "RH"), ex_attr.n_prompt_tokens)
        if st.button("Open in Attribute", key="demo_open", icon=":material/open_in_new:"):
            st.session_state.update(query_prompt=demo["triggered"], query_completion=triggered, attr_query=query,
                                    attr_versus=None)
            if demo.get("clean_answer"):  # "why this and not that": the answer without the trigger, ready to tick
                prefill(demo["clean"], demo["clean_answer"])
            st.switch_page(PAGES["attribute"].path)
