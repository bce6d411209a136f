"""Streamlit glue shared by the explorer's pages: the page list, settings, cached models and indexes, session state,
shared widgets, friendly errors.

Everything that is not Streamlit-specific lives in `rise_core` or the other `explorer` modules; this module is the
only one of them that imports streamlit, the only place that caches resources (`st.cache_resource`) and the only
place that turns exceptions into messages.

Configuration (environment variables):
    RISE_MODEL      model for new indexes and the demo: hub id, local path, or the embedded default (the default)
    RISE_INDEX_DIR  where indexes live (default ./indexes)
    RISE_DATA_DIR   where bundled pools live (default: the bundled demo pools, see rise_core.bundled)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from rise_core import bundled, generation
from rise_core.config import (
    CHANNELS,
    PRESET_SCORING,
    PRESETS,
    SAMPLE_NORMS,
    AppliedScoring,
    RiseConfig,
    ScoreOptions,
    field_choices,
    field_help,
)
from rise_core.default_model import DEFAULT_MODEL_ID
from rise_core.errors import (
    ConfigError,
    IndexMismatchError,
    IndexStoreError,
    InputDataError,
    ModelLoadError,
    RiseError,
)
from rise_core.generation import GenerationSettings
from rise_core.ingest import FieldMap
from rise_core.models import LoadedModel, load_model
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix
from rise_core.units import format_bytes

from .demo import DEMO_ROWS, backdoor_prompts, demo_index_path, demo_model, demo_pool, demo_query
from .jobs import BuildJob, IndexRegistry

if TYPE_CHECKING:
    from rise_core.baselines import BM25Scorer, EmbeddingScorer
    from rise_core.compare import ForwardVectors, MethodScores
    from rise_core.explain import TokenAttribution
    from rise_core.store import RiseIndex

logger = logging.getLogger("rise.explorer")


@dataclass(frozen=True)
class PageSpec:
    """A page of the explorer: its script (relative to app.py, as st.Page, st.page_link and st.switch_page take it),
    its title in the sidebar and its icon."""

    path: str
    title: str
    icon: str


# Every page, in sidebar order: app.py declares them with st.navigation; links and switches name them by key.
PAGES = {
    "home": PageSpec("app_pages/0_Home.py", "Home", ":material/explore:"),
    "build": PageSpec("app_pages/1_Build_index.py", "Build index", ":material/construction:"),
    "attribute": PageSpec("app_pages/2_Attribute.py", "Attribute", ":material/manage_search:"),
    "compare": PageSpec("app_pages/3_Compare_methods.py", "Compare methods", ":material/balance:"),
    "select": PageSpec("app_pages/4_Select_data.py", "Select data", ":material/filter_alt:"),
    "evaluate": PageSpec("app_pages/5_Evaluate.py", "Evaluate", ":material/analytics:"),
    "diagnostics": PageSpec("app_pages/6_Diagnostics.py", "Diagnostics", ":material/monitor_heart:"),
}
# Session-state defaults of the widgets that keep their value across pages (persist_state="session").
DEFAULTS: dict[str, Any] = {
    "query_prompt": "",
    "query_completion": "",
    "lambda_rh": ScoreOptions().lambda_rh,
    "lambda_gh": ScoreOptions().lambda_gh,
    "lambda_hs": ScoreOptions().lambda_hs,
    "sample_norm": ScoreOptions().sample_norm,
    "top_k": 10,
    "where": "",
    "gen_max_new_tokens": GenerationSettings().max_new_tokens,
    "gen_temperature": GenerationSettings().temperature,
    "gen_top_p": GenerationSettings().top_p,
    "gen_seed": GenerationSettings().seed,
}
MAX_CACHED_QUERIES = 16

HINTS = {
    ModelLoadError: "Check the model id or path: a local Hugging Face checkpoint directory, a hub id (needs network "
    f"access), or '{DEFAULT_MODEL_ID}' for the embedded default.",
    IndexMismatchError: "Use the model this index was built with, or build a new index for this model.",
    IndexStoreError: "Pick another index on the left, or rebuild this one on the Build index page.",
    InputDataError: "Check the input: the text fields, the file format and the field mapping.",
    ConfigError: "Fix the value and try again.",
}


@dataclass(frozen=True)
class Settings:
    model_id: str
    index_dir: Path
    data_dir: Path


def settings() -> Settings:
    """Read the configuration from the environment (on every run, so tests can change it)."""
    return Settings(
        model_id=os.environ.get("RISE_MODEL") or DEFAULT_MODEL_ID,
        index_dir=Path(os.environ.get("RISE_INDEX_DIR") or "indexes").expanduser(),
        data_dir=bundled.data_dir(),
    )


# --- page scaffolding -----------------------------------------------------------------------------------------------


def page(key: str, title: str | None = None) -> Settings:
    """Page config, session-state defaults and the title (default: the page's title in PAGES, with its icon);
    returns the settings."""
    spec = PAGES[key]
    title, icon = title or spec.title, spec.icon
    st.set_page_config(page_title=f"{title} · RISE", page_icon=icon, layout="wide")
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.title(f"{icon} {title}")
    return settings()


@contextmanager
def friendly(action: str, stop: bool = False) -> Iterator[None]:
    """Show errors raised inside the block as a message saying what to do, never as a traceback.

    With `stop`, the page ends after the message (for steps the rest of the page depends on)."""
    try:
        yield
    except RiseError as exc:
        hint = next((h for cls, h in HINTS.items() if isinstance(exc, cls)), "")
        st.error(f"**Could not {action}.** {exc}" + (f"\n\n{hint}" if hint else ""), icon=":material/warning:")
    except Exception as exc:  # noqa: BLE001 - unexpected: log the traceback for developers, show a message
        logger.exception("unexpected error while trying to %s", action)
        st.error(f"**Could not {action}:** unexpected {type(exc).__name__}: {exc}\n\n"
                 "This looks like a bug; the details are in the server log. Try again, or reload the page.",
                 icon=":material/bug_report:")
    else:
        return
    if stop:
        st.stop()


# --- cached resources -----------------------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Loading the model (the embedded default takes up to a minute the first time)…",
                   max_entries=3)
def load_lm(model_id: str) -> LoadedModel:
    return load_model(model_id)


@st.cache_resource
def registry() -> IndexRegistry:
    """Open indexes and running builds, shared by every session of this server."""
    return IndexRegistry()


def open_index(path: str | Path) -> RiseIndex:
    return registry().open(path)


def model_for(index: RiseIndex) -> LoadedModel:
    """The model an index was built with (its features are only comparable with that model's)."""
    return load_lm(index.manifest.model_id)


def _stamp(index: RiseIndex) -> str:
    """Changes whenever the index's pool does (a rebuild, an append): the cache key of what is fitted on the pool."""
    m = index.manifest
    return f"{m.index_uuid}:{m.updated_at}:{len(index)}"


@st.cache_resource(max_entries=4, show_spinner="Indexing the pool for BM25…")
def _bm25(path: str, stamp: str) -> BM25Scorer:
    from rise_core.compare import fit_bm25

    return fit_bm25(open_index(path))


def bm25_for(path: str | Path) -> BM25Scorer:
    """A BM25 scorer fitted on the index's pool, in `samples()` order (cached until the index changes)."""
    return _bm25(str(path), _stamp(open_index(path)))


@st.cache_resource(max_entries=2, show_spinner="Embedding the pool with MiniLM…")
def _embeddings(path: str, stamp: str) -> EmbeddingScorer:
    from rise_core.compare import fit_embeddings

    return fit_embeddings(open_index(path))


def embeddings_for(path: str | Path) -> EmbeddingScorer:
    """MiniLM embeddings of the index's pool (cached until the index changes); ModelLoadError when not installed."""
    return _embeddings(str(path), _stamp(open_index(path)))


@st.cache_resource
def _forward_passes() -> dict[tuple[str, str], ForwardVectors]:
    """Pool forward passes run on request (Grad-Sketch), shared by the sessions of this server: the latest two."""
    return {}


def forward_for(path: str | Path) -> ForwardVectors | None:
    """The pool's forward-pass vectors if they were computed for the index as it is now, else None."""
    return _forward_passes().get((str(path), _stamp(open_index(path))))


def run_forward(path: str | Path) -> ForwardVectors:
    """One forward pass of the index's model over its whole pool (Grad-Sketch, hidden states), with a progress bar."""
    from rise_core.compare import forward_vectors

    index = open_index(path)
    key, lm = (str(path), _stamp(index)), model_for(index)
    bar = st.progress(0.0, text=f"Running the model over {len(index)} pool samples…")
    vectors = forward_vectors(lm, index.sample_list(), index.config,
                              progress=lambda done, total: bar.progress(done / total, text=f"{done}/{total} samples"))
    bar.empty()
    store = _forward_passes()
    store[key] = vectors
    while len(store) > 2:
        store.pop(next(iter(store)))
    return vectors


def list_indexes(index_dir: Path) -> list[dict[str, Any]]:
    """Indexes in the directory (empty when it does not exist yet)."""
    from rise_core.store import list_indexes as _list

    return _list(index_dir) if index_dir.is_dir() else []


def index_overview(index_dir: Path) -> pd.DataFrame:
    """One row per index for the Home page: model, pool size, dims, size on disk, build status."""
    rows = []
    for e in list_indexes(index_dir):
        job = registry().job(e["path"])
        if job is not None and job.running:
            status = f"building now ({job.done}/{job.total or '?'})"
        elif "error" in e:
            status = f"unreadable: {e['error']}"
        else:
            status = e.get("status")
        rows.append({"index": Path(e["path"]).name, "model": e.get("model_id"), "pool size": e.get("n_samples"),
                     "dims (K_r, K_h, K_g)": ", ".join(map(str, e["dims"])) if e.get("dims") else None,
                     "size on disk": format_bytes(e["size_bytes"]) if e.get("size_bytes") else None,
                     "build status": status})
    return pd.DataFrame(rows)


def index_picker() -> str | None:
    """The sidebar's index selector (shared by the pages); None, with a hint, when there is no index yet."""
    s = settings()
    with friendly("list the indexes"):
        entries = [e for e in list_indexes(s.index_dir) if "error" not in e]
        paths = [e["path"] for e in entries]
        if not paths:
            st.info(f"No index in `{s.index_dir}` yet. Build one on the Build index page, or run the demo on Home.")
            st.page_link(PAGES["build"].path, label="Build an index", icon=PAGES["build"].icon)
            return None
        if st.session_state.get("index_path") not in paths:
            st.session_state["index_path"] = paths[0]
        by_path = {e["path"]: e for e in entries}
        chosen = st.sidebar.selectbox(
            "Index", paths, key="index_path", persist_state="session",
            format_func=lambda p: f"{Path(p).name} ({by_path[p].get('n_samples', '?')} samples)",
            help=f"Indexes found in {s.index_dir} (set RISE_INDEX_DIR to look elsewhere).",
        )
        entry = by_path[chosen]
        st.sidebar.caption(f"Model: `{entry.get('model_id')}` · {format_bytes(entry.get('size_bytes'))} · "
                           f"{entry.get('status')}")
        return chosen
    return None


NO_HS = ("This index has no HS channel (built with hidden_channel off, or before it existed): it is scored on RH + "
         "GH. Rebuild it with hidden_channel on to weigh HS.")
# slider range of the channel weights: [0, 2], widened if a preset's weight is larger
LAMBDA_MAX = max(2.0, *(getattr(o, f"lambda_{c}") for o in PRESET_SCORING.values() for c in ("rh", "gh", "hs")))
# the scoring preset picker: one entry per `PRESET_SCORING` preset, plus the sliders moved away from every preset
CUSTOM_SCORING = "custom"
SCORING_PRESET_HELP = {
    "default": "this project's default (RH + GH + HS)",
    "paper": "the paper's RISE: its λ and joint normalisation, no HS",
    "backdoor": "backdoor hunting: the default without HS (λ_hs = 0)",
    CUSTOM_SCORING: "custom (the sliders below)",
}


def _weighs_hs(config: RiseConfig | None) -> bool:
    return config is not None and config.hidden_channel


def _applicable(config: RiseConfig | None, options: ScoreOptions) -> AppliedScoring:
    """`options` as they apply to `config`'s channels (None: a page that scores RH and GH only), by the one rule of
    every path, `ScoreOptions.for_channels`: a missing channel's weight is dropped, with a note."""
    if config is None:
        return options.for_channels(CHANNELS[:2], "this page")
    return options.applied_to(config)


def _session_options() -> ScoreOptions:
    return ScoreOptions(lambda_rh=float(st.session_state["lambda_rh"]), lambda_gh=float(st.session_state["lambda_gh"]),
                        lambda_hs=float(st.session_state["lambda_hs"]), sample_norm=st.session_state["sample_norm"])


def score_options(config: RiseConfig | None = None) -> ScoreOptions:
    """The scoring options in the session, as they apply to an index (or evaluation) with `config`."""
    return _applicable(config, _session_options()).options


def _set_scoring(options: ScoreOptions) -> None:
    for name in ("lambda_rh", "lambda_gh", "lambda_hs", "sample_norm"):
        st.session_state[name] = getattr(options, name)


def _matching_preset() -> str:
    """The scoring preset the session's sliders equal, else CUSTOM_SCORING."""
    current = _session_options()
    for name, preset in PRESET_SCORING.items():
        if current.sample_norm == preset.sample_norm and all(
                abs(getattr(current, f"lambda_{c}") - getattr(preset, f"lambda_{c}")) < 1e-9 for c in CHANNELS):
            return name
    return CUSTOM_SCORING


def _apply_scoring_preset() -> None:
    name = st.session_state["scoring_preset"]
    if name in PRESET_SCORING:
        _set_scoring(PRESET_SCORING[name])


def score_controls(config: RiseConfig | None = None, hs_note: str | None = None) -> ScoreOptions:
    """A scoring preset picker (it sets the controls below), λ_rh / λ_gh sliders, λ_hs when `config` stores the HS
    channel (else a caption, `hs_note` or the rule's note, says why not), and the per-sample normalisation. Moving
    them rescores without running the model; the picker then reads 'custom'. Returns the options as applied."""
    help_ = field_help(ScoreOptions)
    st.session_state["scoring_preset"] = _matching_preset()  # what the controls hold now
    st.selectbox("Scoring preset", [*PRESET_SCORING, CUSTOM_SCORING], key="scoring_preset",
                 on_change=_apply_scoring_preset, format_func=lambda n: f"{n}: {SCORING_PRESET_HELP.get(n, n)}",
                 help="Sets the weights and the normalisation below (`rise query --preset NAME` does the same); "
                      "moving them afterwards is allowed.")
    st.slider("λ_rh (lexical)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_rh", persist_state="session",
              help=help_["lambda_rh"])
    st.slider("λ_gh (semantic)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_gh", persist_state="session",
              help=help_["lambda_gh"])
    if _weighs_hs(config):
        st.slider("λ_hs (representation)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_hs", persist_state="session",
                  help=help_["lambda_hs"])
    st.selectbox("Per-sample normalisation", SAMPLE_NORMS, key="sample_norm", persist_state="session",
                 help=help_["sample_norm"])
    with friendly("apply the scoring weights", stop=True):
        applied = _applicable(config, _session_options())
    if applied.notes or not _weighs_hs(config):
        st.caption(hs_note or applied.note or NO_HS)
    return applied.options


def generation_settings() -> GenerationSettings:
    """Length and sampling of the model's continuation, behind an expander (greedy by default)."""
    with st.expander("Generation settings"):
        c1, c2, c3, c4 = st.columns(4)
        c1.number_input("New tokens", 1, 512, key="gen_max_new_tokens", persist_state="session")
        c2.number_input("Temperature (0 = greedy)", 0.0, 2.0, step=0.1, key="gen_temperature",
                        persist_state="session")
        c3.number_input("Top-p", 0.05, 1.0, step=0.05, key="gen_top_p", persist_state="session")
        c4.number_input("Seed", 0, 2**31 - 1, key="gen_seed", persist_state="session")
    return GenerationSettings(max_new_tokens=int(st.session_state["gen_max_new_tokens"]),
                              temperature=float(st.session_state["gen_temperature"]),
                              top_p=float(st.session_state["gen_top_p"]), seed=int(st.session_state["gen_seed"]))


def stream_answer(lm: LoadedModel, prompt: str, settings: GenerationSettings) -> str:
    """The model's answer to `prompt`, written on the page as it is generated; returns it ("" when it says nothing)."""
    pieces = st.write_stream(generation.stream(lm, prompt, settings))
    return ("".join(pieces) if isinstance(pieces, list) else str(pieces)).strip()


def query_inputs(path: str) -> None:
    """The query's prompt, a button that streams the index's model's continuation, and the (editable) generation."""
    st.text_area("Prompt", key="query_prompt", persist_state="session", height=80,
                 help="The instruction or context the generation answers (optional).")
    index = open_index(path)
    adapter = index.manifest.model_info.get("adapter")
    if adapter:
        st.info(f"This index's model was fine-tuned on its pool (adapter `{Path(adapter['path']).name}`): let it "
                "answer the prompt, then attribute what it said to the examples it learned from.",
                icon=":material/school:")
    settings = generation_settings()
    if st.button("Generate the continuation with the model", key="generate", icon=":material/auto_awesome:",
                 type="primary" if adapter else "secondary",
                 help="Decodes with the index's model (settings above); the text streams in and you may edit it."):
        with friendly("generate a continuation"):
            lm = model_for(index)
            text = stream_answer(lm, st.session_state["query_prompt"], settings)
            if not text:
                raise InputDataError("the model generated nothing for this prompt; type the generation yourself")
            st.session_state["query_completion"] = text
    st.text_area("Generation (the query to attribute)", key="query_completion", persist_state="session", height=100,
                 help="The model output whose training-data sources you want; its tokens are the ones that count.")


def query_sample() -> Sample | None:
    """The typed query as a sample (prompt + generation); a warning and None when the generation is empty."""
    prompt = (st.session_state.get("query_prompt") or "").strip()
    completion = (st.session_state.get("query_completion") or "").strip()
    if not completion:
        st.warning("Type the generation to attribute (or let the model generate it from the prompt).")
        return None
    return Sample(prompt=prompt or None, completion=completion, id="query")


def query_features(index: RiseIndex, lm: LoadedModel, queries: list[Sample]) -> FeatureMatrix:
    """Query features, cached in the session by (index, model, config, query text): sliders never rerun the model."""
    from rise_core import attribution

    cache: dict[tuple, FeatureMatrix] = st.session_state.setdefault("_query_features", {})
    m = index.manifest
    key = (str(index.path), m.created_at, m.model_fingerprint, m.config.fingerprint(),
           tuple((q.prompt, q.completion, q.text) for q in queries))
    if key not in cache:
        with st.spinner("Running the model on the query…"):
            cache[key] = attribution.query_features(index, lm, queries)
        while len(cache) > MAX_CACHED_QUERIES:
            cache.pop(next(iter(cache)))
    return cache[key]


# --- attributing ---------------------------------------------------------------------------------------------------


def explanation(index: RiseIndex, lm: LoadedModel, path: str, hit_id: str, query: Sample, query_fm: FeatureMatrix,
                options: ScoreOptions) -> tuple[TokenAttribution, TokenAttribution]:
    """Token contributions of a hit and of the query (`attribution.explain`), cached in the session."""
    from rise_core import attribution

    cache = st.session_state.setdefault("_explanations", {})
    key = (path, index.manifest.created_at, query, hit_id, options)
    if key not in cache:
        if len(cache) >= 64:
            cache.clear()
        with st.spinner("Explaining…"):
            cache[key] = attribution.explain(index, lm, str(hit_id), query, query_fm, options)
    return cache[key]


# --- comparing methods ----------------------------------------------------------------------------------------------


def forward_pass_offer(path: str) -> None:
    """Grad-Sketch needs the model over the whole pool: say what that costs and run it only when asked."""
    index = open_index(path)
    slot = st.empty()
    if forward_for(path) is None:
        extra = "" if index.config.hidden_channel else " The same pass gives hidden cosine (this index has no HS channel)."
        with slot.container():
            st.info(f"**Grad-Sketch** (the exact LM-head gradient of each sample, sketched to this index's bytes per "
                    f"sample) needs one forward pass of `{index.manifest.model_id}` over all **{len(index)} pool "
                    f"samples**, about as long as building the index took.{extra}", icon=":material/info:")
            run = st.button(f"Run Grad-Sketch over {len(index)} pool samples", key="cmp_grad",
                            icon=":material/play_arrow:")
        if not run:
            return
        with friendly("run the forward pass over the pool"):
            run_forward(path)
    if forward_for(path) is not None:
        slot.caption(f"Grad-Sketch: the forward pass over the {len(index)} pool samples is done (kept while this "
                     "server runs).")


def show_comparison(results: dict[str, MethodScores], pool: pd.DataFrame, k: int) -> None:
    """Agreement of each method with RISE, the methods' top-k lists side by side, and label metrics when the pool has
    binary labels."""
    from rise_core.agreement import agreement_table
    from rise_core.compare import RISE

    from .views import binary_labels, label_table, top_list

    ready = {name: r for name, r in results.items() if r.available}
    for name, r in results.items():
        if not r.available:
            st.caption(f"**{name}**: {r.missing}.")
    n_queries = next(iter(ready.values())).scores.shape[0]
    per = " per query, averaged" if n_queries > 1 else ""
    st.markdown(f"**Agreement with RISE** over the whole pool{per}: the share of RISE's top {k} that each method also "
                "ranks in its top k, and the rank correlations of their scores (1: the same order, -1: reversed).")
    table = agreement_table({name: r.scores for name, r in ready.items()}, RISE, k)
    st.dataframe(table, key="cmp_agreement", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in table.columns})

    st.markdown(f"**Top {k} of each method**")
    for col, (name, r) in zip(st.columns(len(ready)), ready.items(), strict=True):
        col.markdown(f"**{name}**")
        col.dataframe(top_list(pool, r.mean(), k), hide_index=True, column_config={
            "score": st.column_config.NumberColumn(format="%.4f")})

    labels = binary_labels(pool["label"]) if "label" in pool.columns else None
    if labels is not None and labels.any():
        st.markdown(f"**Against the pool's labels** ({int(labels.sum())} positives of {labels.size})")
        st.dataframe(label_table({name: r.mean() for name, r in ready.items()}, labels, k).round(4), key="cmp_labels")
    else:
        st.caption("The pool has no binary labels: precision@k and AP are not available.")


# --- building ---

FIELD_NAMES = ("text", "prompt", "completion", "id", "label")
NO_COLUMN = "(none)"


def field_mapping(df: pd.DataFrame) -> FieldMap:
    """Selectboxes mapping an uploaded table's columns onto the sample fields, prefilled with a guess."""
    columns = [NO_COLUMN, *map(str, df.columns)]
    try:
        guess = FieldMap.guess(list(df.columns))
    except InputDataError:  # no recognisable text column: the user maps it
        guess = FieldMap(text=None, prompt=None, completion=None, id=None, label=None)
    st.markdown("**Field mapping**: the column with the text (or the prompt and the completion), the id and the label.")
    cols = st.columns(len(FIELD_NAMES))
    picked = {}
    for col, name in zip(cols, FIELD_NAMES, strict=True):
        current = getattr(guess, name) or NO_COLUMN
        picked[name] = col.selectbox(name, columns, index=columns.index(current) if current in columns else 0,
                                     key=f"map_{name}")
    return FieldMap(**{k: (None if v == NO_COLUMN else v) for k, v in picked.items()})


def _apply_preset() -> None:
    for name, value in PRESETS[st.session_state["build_preset"]].to_dict().items():
        st.session_state[f"cfg_{name}"] = value


def config_form() -> RiseConfig:
    """The RISE hyperparameters, prefilled with the defaults (or a preset), each with its help as a tooltip."""
    helps, choices = field_help(RiseConfig), field_choices(RiseConfig)
    for name, value in RiseConfig().to_dict().items():
        st.session_state.setdefault(f"cfg_{name}", value)
    with st.expander("RISE hyperparameters (hover a field for what it does)"):
        st.selectbox("Preset", list(PRESETS), index=list(PRESETS).index("default"), key="build_preset",
                     on_change=_apply_preset, help="'paper': the paper's exact recipe; 'default': this project's.")
        cols = st.columns(4)
        for i, (name, default) in enumerate(RiseConfig().to_dict().items()):
            col, key, kw = cols[i % 4], f"cfg_{name}", {"help": helps[name], "persist_state": "session"}
            if isinstance(default, bool):
                col.checkbox(name, key=key, **kw)
            elif name in choices:
                col.selectbox(name, choices[name], key=key, **kw)
            elif isinstance(default, float):
                col.number_input(name, key=key, format="%.3f", **kw)
            else:
                col.number_input(name, step=1, key=key, **kw)
    return RiseConfig(**{name: st.session_state[f"cfg_{name}"] for name in RiseConfig().to_dict()})


# --- builds ---------------------------------------------------------------------------------------------------------


def start_build(job: BuildJob) -> BuildJob:
    return registry().start_build(job)


def show_build(path: str | Path | None) -> BuildJob | None:
    """Progress of the build of `path` (live while it runs, with a Stop button), or its outcome."""
    job = registry().job(path) if path else None
    if job is None:
        return None
    if job.running:
        _live_progress(str(path))
    elif job.status == "failed":
        with friendly("build the index"):
            raise job.error  # type: ignore[misc]
    elif job.status == "stopped":
        st.warning(job.message())
    else:
        st.success(job.message())
    return job


@st.fragment(run_every=1.0)
def _live_progress(path: str) -> None:
    job = registry().job(path)
    if job is None or not job.running:
        st.rerun()  # the whole page: show the outcome
    st.progress(job.fraction, text=job.message())
    st.button("Stop the build", key=f"stop_{path}", on_click=job.stop, disabled=job.stopping,
              help="Stops after the batch in progress; what is done stays in the index and a later build resumes.")


# --- the one-click demo ---------------------------------------------------------------------------------------------


def start_demo(s: Settings) -> None:
    """Build (or reuse) the demo index in the background; `finish_demo` opens the demo when it is ready.

    With the shipped backdoored adapter (the app on the embedded default), the index covers the whole Howdy! pool
    the adapter learned, and the demo is retrospective: the model answers a held-out prompt with and without the
    trigger (`explorer.demo_ui`). Otherwise a slice of the pool is indexed with the app's model and Attribute opens
    on a bundled query."""
    model_id, backdoored = demo_model(s.data_dir, s.model_id)
    n_rows = 0 if backdoored else DEMO_ROWS
    name, pool = demo_pool(s.data_dir, n_rows)
    path = demo_index_path(s.index_dir, name, model_id, n_rows)
    st.session_state["_demo"] = {"path": str(path), "query": demo_query(s.data_dir, name), "backdoored": backdoored,
                                 "prompts": backdoor_prompts(s.data_dir) if backdoored else None}
    entry = next((e for e in list_indexes(s.index_dir) if Path(e["path"]) == path), None)
    if entry is not None and entry.get("status") == "complete" and (entry.get("n_samples") or 0) >= len(pool.samples):
        return
    lm = load_lm(model_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    start_build(BuildJob(path, pool, lm, RiseConfig(), label=f"demo ({name})"))


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
