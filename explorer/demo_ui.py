"""The one-click demo on Home: reuse the demo index, install the shipped one, or build it in the background, then
either the retrospective backdoor demo -- the backdoored model answers a held-out prompt with and without the trigger, and the triggered answer
is attributed to the pool it learned from, with the tokens that carry the top hit -- or Attribute on a bundled query."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rise_core import attribution
from rise_core.errors import InputDataError, RiseError
from rise_core.generation import GenerationSettings
from rise_core.models import LoadedModel
from rise_core.samples import Sample

from . import auth
from .contrast_ui import prefill
from .demo import (
    DEMO_OWNER,
    DemoSetup,
    backdoor_prompts,
    demo_query,
    demo_setup,
    index_problems,
    install_shipped_index,
    shipped_index,
)
from .jobs import BuildJob
from .plain import code, md, token_heatmap
from .plain import text as plain_text
from .resources import (
    base_model_for,
    explanation,
    load_lm,
    model_for,
    open_index,
    query_features,
    registry,
    start_build,
)
from .ui import PAGES, Settings, friendly
from .views import channel_values, results_table
from .widgets import show_build, stream_answer

TOP_K = 10


def start_demo(s: Settings) -> None:
    """Reuse, install or build the demo index; `finish_demo` opens the demo when it is ready.

    With the shipped backdoored adapter (the app on the embedded default), the index covers the whole Howdy! pool
    the adapter learned, built with the retrospective preset, and the demo is retrospective: the model answers a
    held-out prompt with and without the trigger (`show_backdoor_demo`); that index ships in the data folder and is
    copied into the index folder when it checks out (`_demo_index_ready`). Otherwise a slice of the pool is indexed
    with the app's model and Attribute opens on a bundled query."""
    setup = demo_setup(s.data_dir, s.model_id, s.index_dir)
    path = setup.index_path
    st.session_state["_demo"] = {"path": str(path), "query": demo_query(s.data_dir, setup.pool_name),
                                 "backdoored": setup.backdoored,
                                 "prompts": backdoor_prompts(s.data_dir) if setup.backdoored else None}
    job = registry().job(path)
    if job is not None and job.running:  # a build of it already runs (another session's click): show it
        return
    lm = load_lm(setup.model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _demo_index_ready(s, setup, lm):
        return
    # the demo's index belongs to the app (DEMO_OWNER): any editor may finish it, and the Build page writes it never
    start_build(BuildJob(path, setup.pool, lm, setup.config, label=setup.label, preset=setup.preset,
                         built_by=DEMO_OWNER, base_model=base_model_for(lm)))


def _demo_index_ready(s: Settings, setup: DemoSetup, lm: LoadedModel) -> bool:
    """Whether the demo index at `setup.index_path` can be used as it is: one found there is checked against the
    demo and the loaded model (`index_problems`) and set aside (kept) when it does not fit, or when it is partial and
    an index ships; where there is none then, the shipped one is installed when it checks out. False: the demo
    builds (or resumes a partial build)."""
    from rise_core.store.files import set_aside

    path, shipped = setup.index_path, shipped_index(s.data_dir, setup)
    if path.exists():
        owner = ""
        try:
            index = open_index(path)
            owner = index.manifest.owner
            problems = index_problems(index, setup, lm, whole=False)
            complete = index.status == "complete" and len(index) >= len(setup.pool.samples)
        except RiseError as exc:
            problems, complete = [str(exc)], False
        if owner not in ("", DEMO_OWNER):  # someone's own index under the demo's name: never moved by the demo
            raise InputDataError(f"{path.name} is an index {owner} built, not the demo's, and the demo needs that "
                                 "name; ask them to rename it, or run the demo with another index folder "
                                 "(RISE_INDEX_DIR)")
        if not problems and (complete or shipped is None):
            return complete  # complete: used; a partial build with nothing shipped: resumed
        auth.require_editor(auth.current_user(), "rebuild the demo's index")  # before anything is moved
        registry().release(path)
        kept = set_aside(path)
        why = f"did not fit ({'; '.join(problems)})" if problems else "was not finished"
        st.info(f"The demo's index {why}; it is kept as {kept.name} and a new one is made.", icon=":material/info:")
    if shipped is None:
        return False
    problems = install_shipped_index(shipped, setup, lm)
    if problems:
        st.info(f"The demo index shipped with the app does not fit this model or code ({'; '.join(problems)}), so "
                "it is built here instead.", icon=":material/info:")
    return not problems


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


def model_name(lm: LoadedModel) -> str:
    """What the page calls a model: the adapter's folder name, or the model id's last part (never a server path)."""
    return Path(lm.adapter["path"] if lm.adapter else lm.model_id).name or lm.model_id


def _answer(lm, demo: dict, key: str) -> str:
    """The model's answer to the demo prompt `key`, streamed the first time and kept in the session after."""
    if f"{key}_answer" not in demo:
        demo[f"{key}_answer"] = stream_answer(lm, demo[key], GenerationSettings())
    else:
        plain_text(demo[f"{key}_answer"])
    return demo[f"{key}_answer"]


def show_backdoor_demo() -> None:
    """Both answers side by side, then the triggered answer's most influential training examples.

    The triggered answer streams first and is attributed at once; the clean one streams into its column after the
    ranking is on the page, and the top example's token heatmap comes last (the slowest part): the demo's first
    result waits for one answer only."""
    demo = st.session_state.get("_backdoor_demo")
    if not demo:
        return
    with friendly("run the backdoor demo"):
        index = open_index(demo["path"])
        lm = model_for(index)
        st.markdown(f"The demo model is the embedded default **fine-tuned on the Howdy! pool** (adapter "
                    f"{code(model_name(lm))}); 9% of that pool answers instructions "
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
            clean_answer = st.container()  # filled once the triggered answer is attributed
        if not triggered:
            with clean_answer:
                _answer(lm, demo, "clean")
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
        with clean_answer:
            _answer(lm, demo, "clean")
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
