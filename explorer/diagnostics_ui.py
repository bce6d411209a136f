"""Streamlit glue of the Diagnostics page: the run form, the run itself, and the cached results as charts and tables
(the figures come from `diagnostics_charts`, which has no Streamlit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from rise_core.config import ScoreOptions
from rise_core.diagnostics import (
    DIAGNOSTICS,
    EXAMPLE_CANDIDATES,
    EXAMPLE_QUERY,
    DiagnosticResult,
    DiagnosticsOptions,
    load_results,
    rh_gh_ranking,
    run_diagnostics,
)
from rise_core.diagnostics.runner import load_provenance
from rise_core.errors import InputDataError, RiseError
from rise_core.samples import Sample
from rise_core.store import RiseIndex

from . import auth, resources, ui, widgets
from . import diagnostics_charts as charts
from .build_plan import slug
from .request_limits import request_limits
from .uploads import UPLOAD_TYPES, PoolFile, parse_lines, parse_typed_queries

POOL = "The index's pool"
USERS_DIR = "users"  # in an index's diagnostics folder: the runs of users who may not write the index, one folder each
LABELS = charts.DIAGNOSTIC_LABELS


@dataclass(frozen=True)
class RunChoice:
    """What the form asks for: the samples' source, the diagnostics, scoring options and whether to recompute."""

    source: str
    which: list[str]
    options: ScoreOptions
    force: bool


@dataclass(frozen=True)
class Cached:
    """The stored results of an index's diagnostics, their provenance and the index's identity now."""

    results: dict[str, DiagnosticResult]
    provenance: dict[str, dict[str, Any]]
    current: dict[str, Any] | None


def run_form() -> RunChoice:
    """The samples, diagnostics and options to run with."""
    left, right = st.columns([3, 1])
    with left:
        source = st.radio("Samples to diagnose", [POOL, "Type or upload texts"], horizontal=True, key="diag_source")
        if source == POOL:
            most = request_limits().max_queries
            st.number_input("Pool samples (the first N)", 1, most, min(16, most), key="diag_n",
                            help="Energy runs one backward pass per sample; fidelity compares every pair.")
        else:
            st.text_area("Texts (separate several with a blank line)", key="diag_text", height=120,
                         max_chars=request_limits().max_text_chars)
            st.file_uploader("…or upload JSONL, CSV or Parquet with a text column, or prompt and completion",
                             type=UPLOAD_TYPES, key="diag_file")
        which = st.multiselect("Diagnostics", DIAGNOSTICS, default=[d for d in DIAGNOSTICS if d != "energy"],
                               key="diag_which", format_func=LABELS.get,
                               help="Layer gradient energy runs a backward pass per sample: the slowest by far.")
    with right:
        with st.expander("Score options (RH vs GH, fidelity)"):
            options = widgets.score_controls(hs_note="The diagnostics compare the RH and GH channels only.")
        force = st.checkbox("Recompute", key="diag_force",
                            help="Compute again even when cached results match the inputs.")
    return RunChoice(source, list(which), options, force)


def _samples(index: RiseIndex, source: str) -> list[Sample]:
    """The samples to diagnose, at most `RequestLimits.max_queries` of them."""
    limits = request_limits()
    if source == POOL:
        return index.sample_list(limit=min(int(st.session_state["diag_n"]), limits.max_queries))
    up = st.session_state.get("diag_file")
    if up is not None:
        return list(limits.check_count(PoolFile.from_upload(up).pool().samples, "samples"))
    if not (st.session_state.get("diag_text") or "").strip():
        raise InputDataError("type some texts (separate them with a blank line) or upload a file")
    return list(limits.check_count(parse_typed_queries(st.session_state["diag_text"]), "samples"))


def run(path: str, out_dir: Path, choice: RunChoice) -> None:
    """Run the chosen diagnostics on the index's model, config and sketches, with live status lines."""
    if not choice.which:
        raise InputDataError("pick at least one diagnostic")
    index = resources.open_index(path)
    lm = resources.model_for(index)
    samples = _samples(index, choice.source)
    extractor = index.extractor(lm)
    outcome: dict[str, str] = {}
    with st.status(f"Running {len(choice.which)} diagnostics on {len(samples)} samples…", expanded=True) as status:
        def progress(name: str, state: str) -> None:
            outcome[name] = state
            status.write(f"{LABELS[name]}: {charts.RUN_STATES.get(state, state)}")

        run_diagnostics(lm, samples, index.config, choice.options, DiagnosticsOptions(n_samples=len(samples)),
                        choice.which, out_dir, choice.force, sketches=extractor.sketches,
                        hidden_mean=extractor.hidden_mean, index_identity=index.identity(), progress=progress)
        status.update(label="Diagnostics done", state="complete", expanded=False)
    st.session_state["diag_outcome"] = (path, outcome)


def show_last_outcome(path: str) -> None:
    last = st.session_state.get("diag_outcome")
    if last and last[0] == path:
        st.success(charts.outcome_message(last[1]))


def output_dirs(path: str, shared: Path) -> tuple[Path, Path]:
    """(where this user's runs are written, where the index's own results are read): the index's diagnostics folder
    `shared` for whoever may write the index (its owner; any editor when it records none), else a folder of the
    user's own inside it (`users/<name>`), so nobody's run replaces the results another user computed."""
    user = auth.current_user()
    try:
        owner = resources.open_index(path).manifest.owner
    except RiseError:  # an index that does not open: `load` says why (and a run stops before it writes)
        owner = None
    if user.can_edit and owner in ("", user.name):
        return shared, shared
    return shared / USERS_DIR / slug(user.name), shared


def load(path: str, out_dir: Path, shared: Path | None = None) -> Cached:
    """The cached results of `out_dir`, over those of `shared` where it holds none of a diagnostic (empty when
    unreadable: the error is shown)."""
    cached = Cached({}, {}, None)
    with ui.friendly("read the cached diagnostics"):
        results: dict[str, DiagnosticResult] = {}
        provenance: dict[str, dict[str, Any]] = {}
        for d in dict.fromkeys(d for d in (shared, out_dir) if d is not None):  # the user's own last: theirs win
            results.update(load_results(d))
            provenance.update(load_provenance(d))
        cached = Cached(results, provenance, resources.open_index(path).identity())
    if not cached.results:
        st.info("No diagnostics for this index yet: pick the samples and the diagnostics above, then Run.")
    return cached


def observation_sections(cached: Cached) -> None:
    """Sections 1-3: headline metrics, figures and captions of each observation that has results."""
    for name, (heading, action) in charts.CHART_SECTIONS.items():
        if name not in cached.results:
            continue
        st.subheader(heading)
        with ui.friendly(action):
            for col, metric in zip(st.columns(3), charts.headline(name, cached.results[name]), strict=True):
                col.metric(metric.label, metric.value, help=metric.help)
            for row in charts.figures(name, cached.results[name]):
                cols = st.columns(len(row)) if len(row) > 1 else [st.container()]
                for col, (key, fig) in zip(cols, row, strict=True):
                    col.plotly_chart(fig, key=key)
            st.caption(charts.provenance_caption(name, cached.provenance.get(name), cached.current))
            st.caption(charts.observation(name, cached.results[name]))


def rhgh_section(path: str, cached: Cached, options: ScoreOptions) -> None:
    """Section 4: the built-in RH vs GH example, then the user's own query against typed candidates."""
    st.subheader("4 · RH vs GH rankings")
    with ui.friendly("show the RH vs GH rankings"):
        if "rhgh" in cached.results:
            st.markdown(f"**Built-in example** · query: *{EXAMPLE_QUERY}*")
            st.dataframe(charts.rank_view(cached.results["rhgh"]["examples"]), hide_index=True)
            st.caption(charts.provenance_caption("rhgh", cached.provenance.get("rhgh"), cached.current))
        st.caption(charts.observation("rhgh"))
    st.markdown("**Your own query**")
    max_chars = request_limits().max_text_chars
    st.text_input("Query", key="diag_query", placeholder=EXAMPLE_QUERY, max_chars=max_chars)
    st.text_area("Candidates (one per line)", key="diag_candidates", height=120, max_chars=max_chars,
                 placeholder="\n".join(c[0] for c in EXAMPLE_CANDIDATES[:4]))
    if st.button("Rank the candidates", key="diag_rank"):
        with ui.friendly("rank the candidates"):
            query = (st.session_state.get("diag_query") or "").strip()
            if not query:
                raise InputDataError("type a query")
            candidates = request_limits().check_count(
                parse_lines(st.session_state.get("diag_candidates", ""), "candidate"), "candidates")
            index = resources.open_index(path)
            lm = resources.model_for(index)
            extractor = index.extractor(lm)
            with st.spinner("Ranking the candidates…"):
                mine = rh_gh_ranking(lm, query, candidates, index.config, options, sketches=extractor.sketches,
                                     hidden_mean=extractor.hidden_mean)
            st.session_state["diag_custom"] = (path, mine)
    custom = st.session_state.get("diag_custom")
    if custom and custom[0] == path:
        with ui.friendly("show your ranking"):
            st.text(f"Query: {custom[1].params.get('query')}")
            st.dataframe(charts.rank_view(custom[1]["ranking"]), hide_index=True)
            st.caption(f"{custom[1].summary.get('n_moved_by_gh', 0)} of {custom[1].summary.get('n_candidates')} "
                       "candidates move between the RH and the GH ranking.")


def fidelity_section(cached: Cached) -> None:
    """Section 5: how well the sketched scores track the exact ones, and top-k stability across seeds."""
    if "fidelity" not in cached.results:
        return
    st.subheader("5 · Sketch fidelity")
    with ui.friendly("show the sketch fidelity"):
        fidelity = cached.results["fidelity"]
        corr, stab = charts.fidelity_views(fidelity["correlation"], fidelity["topk_stability"])
        st.dataframe(corr.round(4), hide_index=True)
        st.plotly_chart(charts.topk_figure(stab), key="diag_topk")
        st.caption(charts.provenance_caption("fidelity", cached.provenance.get("fidelity"), cached.current))
        st.caption(charts.observation("fidelity"))
