"""The widgets the pages share: the sidebar's index picker, the query inputs and the model's streamed answer, the
scoring controls (preset picker and λ sliders), the Build and Evaluate forms (field mapping, RISE hyperparameters)
and a build's live progress. Widget keys are fixed here, so a value typed on one page is there on the next."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import streamlit as st

from rise_core import adaptive, generation
from rise_core.attribution import index_preset
from rise_core.config import (
    CHANNELS,
    PRESET_SCORING,
    PRESET_TABLE,
    PRESETS,
    SAMPLE_NORMS,
    AppliedScoring,
    RiseConfig,
    ScoreOptions,
    field_choices,
    field_help,
    index_preset_line,
    preset_descriptions,
)
from rise_core.errors import InputDataError
from rise_core.generation import GenerationSettings
from rise_core.ingest import FieldMap
from rise_core.models import LoadedModel
from rise_core.samples import Sample
from rise_core.store import RiseIndex
from rise_core.units import format_bytes

from . import auth
from .jobs import BackgroundJob, BuildJob
from .plain import code, md, stream_text
from .request_limits import ConfigLimits, request_limits
from .resources import list_indexes, model_for, open_index, registry
from .ui import PAGES, friendly, settings
from .uploads import UPLOAD_TYPES, PoolFile, parse_typed_queries

# --- the index --------------------------------------------------------------------------------------------------------


def index_picker() -> str | None:
    """The sidebar's index selector (shared by the pages); None, with a hint, when there is no index yet."""
    s = settings()
    with friendly("list the indexes"):
        entries = [e for e in list_indexes(s.index_dir) if "error" not in e]
        paths = [e["path"] for e in entries]
        if not paths:
            st.info(f"No index in the index folder ({md(s.index_dir.name)}, RISE_INDEX_DIR) yet. Build one on the "
                    "Build index page, or run the demo on Home.")  # the folder's name, not the server's path
            st.page_link(PAGES["build"].path, label="Build an index", icon=PAGES["build"].icon)
            return None
        if st.session_state.get("index_path") not in paths:  # the first index not being built (it cannot be opened)
            building = {p for p in paths if (job := registry().job(p)) is not None and job.running}
            st.session_state["index_path"] = next((p for p in paths if p not in building), paths[0])
        by_path = {e["path"]: e for e in entries}
        chosen = st.sidebar.selectbox(
            "Index", paths, key="index_path", persist_state="session",
            format_func=lambda p: f"{Path(p).name} ({by_path[p].get('n_samples', '?')} samples)",
            help=f"Indexes found in the index folder, {md(s.index_dir.name)} (set RISE_INDEX_DIR to look elsewhere).",
        )
        entry = by_path[chosen]
        st.sidebar.caption(f"Model: {code(entry.get('model_id'))} · {format_bytes(entry.get('size_bytes'))} · "
                           f"{md(entry.get('status'))}")
        return chosen
    return None


def picked_index() -> tuple[str, RiseIndex]:
    """The sidebar's chosen index (`index_picker`) and the index opened; the page stops (after the picker's hint, or
    a plain error) when there is none or it does not open."""
    path = index_picker()
    if path is None:
        st.stop()
    with friendly("open the index", stop=True):  # on an error it shows a message and stops the page
        index = open_index(path)
    return path, index


# --- scoring ----------------------------------------------------------------------------------------------------------

NO_HS = ("This index has no HS channel (built with hidden_channel off, or before it existed): it is scored on RH + "
         "GH. Rebuild it with hidden_channel on to weigh HS.")
# slider range of the channel weights: [0, 2], widened if a preset's weight is larger
LAMBDA_MAX = max(2.0, *(getattr(o, f"lambda_{c}") for o in PRESET_SCORING.values() for c in ("rh", "gh", "hs")))
# the scoring preset picker: one entry per `PRESET_SCORING` preset, plus the sliders moved away from every preset
CUSTOM_SCORING = "custom"
SCORING_PRESET_HELP = {**{name: p.description for name, p in PRESET_TABLE.items()},
                       CUSTOM_SCORING: "custom (the sliders below)"}
# a preset whose scoring equals an earlier one's (retrospective scores as fixed: it differs in its index) is not
# offered twice
SCORING_CHOICES = [name for i, (name, options) in enumerate(PRESET_SCORING.items())
                   if options not in list(PRESET_SCORING.values())[:i]]


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
                        lambda_hs=float(st.session_state["lambda_hs"]), sample_norm=st.session_state["sample_norm"],
                        weighting="auto" if st.session_state.get("weighting_auto") else "fixed")


def score_options(config: RiseConfig | None = None) -> ScoreOptions:
    """The scoring options in the session, as they apply to an index (or evaluation) with `config`."""
    return _applicable(config, _session_options()).options


def _set_scoring(options: ScoreOptions) -> None:
    for name in ("lambda_rh", "lambda_gh", "lambda_hs", "sample_norm"):
        st.session_state[name] = getattr(options, name)
    st.session_state["weighting_auto"] = options.weighting == "auto"


def _same_scoring(a: ScoreOptions, b: ScoreOptions) -> bool:
    return a.sample_norm == b.sample_norm and a.weighting == b.weighting and all(
        abs(getattr(a, f"lambda_{c}") - getattr(b, f"lambda_{c}")) < 1e-9 for c in CHANNELS)


def _matching_preset() -> str:
    """The scoring preset the session's sliders equal, else CUSTOM_SCORING."""
    current = _session_options()
    return next((name for name in SCORING_CHOICES if _same_scoring(current, PRESET_SCORING[name])), CUSTOM_SCORING)


def _start_from_index_preset(index: RiseIndex) -> str | None:
    """The first time a page shows `index` (picked, or switched back to), the scoring controls start from the preset it
    was built for (`IndexManifest.build_preset`; an index without one leaves them as they are). Returns that preset
    while the controls still hold its scoring, else None."""
    name = index_preset(index)
    seen = f"{index.path.resolve()}:{index.manifest.index_uuid}"
    if name is not None and st.session_state.get("_scoring_index") != seen:
        _set_scoring(PRESET_SCORING[name])
    st.session_state["_scoring_index"] = seen
    return name if name is not None and _same_scoring(_session_options(), PRESET_SCORING[name]) else None


def _weights_by_hand() -> None:
    st.session_state["weighting_auto"] = False  # weights set by hand are used as given (as on the command line)


def _apply_scoring_preset() -> None:
    name = st.session_state["scoring_preset"]
    if name in PRESET_SCORING:
        _set_scoring(PRESET_SCORING[name])


def score_controls(config: RiseConfig | None = None, hs_note: str | None = None, index: RiseIndex | None = None
                   ) -> ScoreOptions:
    """A scoring preset picker (it sets the controls below), λ_rh / λ_gh sliders, λ_hs when `config` stores the HS
    channel (else a caption, `hs_note` or the rule's note, says why not), and the per-sample normalisation. Moving
    them rescores without running the model; the picker then reads 'custom'. With `index`, they start from the preset
    it was built for, and a caption says so. Returns the options as applied."""
    help_ = field_help(ScoreOptions)
    built_for = _start_from_index_preset(index) if index is not None else None
    st.session_state["scoring_preset"] = _matching_preset()  # what the controls hold now
    st.selectbox("Scoring preset", [*SCORING_CHOICES, CUSTOM_SCORING], key="scoring_preset",
                 on_change=_apply_scoring_preset, format_func=lambda n: f"{n}: {SCORING_PRESET_HELP.get(n, n)}",
                 help="Sets the weights and the normalisation below (`rise query --preset NAME` does the same); "
                      "moving them afterwards is allowed.")
    if built_for is not None:
        st.caption(index_preset_line(built_for, "pick another scoring preset"))
    st.checkbox("Choose the channels per query", key="weighting_auto", persist_state="session",
                help=help_["weighting"] + " Moving a slider sets the weights by hand (and unticks this).")
    st.slider("λ_rh (lexical)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_rh", persist_state="session",
              help=help_["lambda_rh"], on_change=_weights_by_hand)
    st.slider("λ_gh (semantic)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_gh", persist_state="session",
              help=help_["lambda_gh"], on_change=_weights_by_hand)
    if _weighs_hs(config):
        st.slider("λ_hs (representation)", 0.0, LAMBDA_MAX, step=0.05, key="lambda_hs", persist_state="session",
                  help=help_["lambda_hs"], on_change=_weights_by_hand)
    st.selectbox("Per-sample normalisation", SAMPLE_NORMS, key="sample_norm", persist_state="session",
                 help=help_["sample_norm"])
    with friendly("apply the scoring weights", stop=True):
        applied = _applicable(config, _session_options())
    if applied.notes or not _weighs_hs(config):
        st.caption(hs_note or applied.note or NO_HS)
    return applied.options


INTENTS = {
    "Let RISE decide": "per query: the gradient view when its top hits share a span (a trigger) that the "
                       "representation view's lack, else by how much the answer surprises the model",
    "What taught this behaviour": "the gradient view (RH + GH, the paper's RISE): the rows whose training pushed the "
                                  "model towards this answer (a backdoor, a style, a fact)",
    "Examples like this one": "the representation view (HS): the rows that read like the query (a topic, a genre)",
}


def intent_control(options: ScoreOptions, has_hs: bool) -> ScoreOptions:
    """One control for what the user looks for, shown while the channels are chosen per query (with HS stored):
    let the per-query rule decide, or take the gradient or the representation view. Returns the options to score."""
    if options.weighting != "auto" or not has_hs:
        return options
    choice = st.radio("Looking for", list(INTENTS), key="intent", persist_state="session",
                      help="\n\n".join(f"**{k}**: {v}" for k, v in INTENTS.items()))
    if choice == "What taught this behaviour":
        return adaptive.gradient_view(options)
    if choice == "Examples like this one":
        return adaptive.representation_view(options)
    return options


# --- the query --------------------------------------------------------------------------------------------------------


def generation_settings() -> GenerationSettings:
    """Length and sampling of the model's continuation, behind an expander (greedy by default)."""
    with st.expander("Generation settings"):
        c1, c2, c3, c4 = st.columns(4)
        help_ = GenerationSettings.field_help()
        c1.number_input("New tokens", 1, 512, key="gen_max_new_tokens", persist_state="session",
                        help=help_["max_new_tokens"])
        c2.number_input("Temperature (0 = greedy)", 0.0, 2.0, step=0.1, key="gen_temperature",
                        persist_state="session", help=help_["temperature"])
        c3.number_input("Top-p", 0.05, 1.0, step=0.05, key="gen_top_p", persist_state="session", help=help_["top_p"])
        c4.number_input("Seed", 0, 2**31 - 1, key="gen_seed", persist_state="session", help=help_["seed"])
    return session_generation_settings()


def session_generation_settings() -> GenerationSettings:
    """The generation settings as the expander of `generation_settings` holds them in the session (`ui.DEFAULTS` until
    it is changed)."""
    return GenerationSettings(max_new_tokens=int(st.session_state["gen_max_new_tokens"]),
                              temperature=float(st.session_state["gen_temperature"]),
                              top_p=float(st.session_state["gen_top_p"]), seed=int(st.session_state["gen_seed"]))


def stream_answer(lm: LoadedModel, prompt: str, settings: GenerationSettings) -> str:
    """The model's answer to `prompt`, written on the page as plain text as it is generated; returns it ("" when it
    says nothing)."""
    return stream_text(generation.stream(lm, prompt, settings)).strip()


def query_inputs(path: str) -> None:
    """The query's prompt, a button that streams the index's model's continuation, and the (editable) generation."""
    max_chars = request_limits().max_text_chars
    st.text_area("Prompt", key="query_prompt", persist_state="session", height=80, max_chars=max_chars,
                 help="The instruction or context the generation answers (optional).")
    index = open_index(path)
    adapter = index.manifest.model_info.get("adapter")
    if adapter:
        st.info(f"This index's model was fine-tuned on its pool (adapter {code(Path(adapter['path']).name)}): let it "
                "answer the prompt, then attribute what it said to the examples it learned from.",
                icon=":material/school:")
    gen = generation_settings()
    if st.button("Generate the continuation with the model", key="generate", icon=":material/auto_awesome:",
                 type="primary" if adapter else "secondary",
                 help="Decodes with the index's model (settings above); the text streams in and you may edit it."):
        with friendly("generate a continuation"):
            lm = model_for(index)
            text = stream_answer(lm, st.session_state["query_prompt"], gen)
            if not text:
                raise InputDataError("the model generated nothing for this prompt; type the generation yourself")
            st.session_state["query_completion"] = text
    st.text_area("Generation (the query to attribute)", key="query_completion", persist_state="session", height=100,
                 max_chars=max_chars,
                 help="The model output whose training-data sources you want; its tokens are the ones that count.")
    with st.expander("Or a conversation (several turns)", expanded=bool(st.session_state.get("query_messages"))):
        st.text_area("Conversation as JSON", key="query_messages", persist_state="session", height=120,
                     max_chars=max_chars,
                     placeholder='[{"role": "user", "content": "..."}, {"role": "assistant", "content": "..."}]',
                     help="A list of {role, content} turns (system, user, assistant, tool), as a `messages` row of a "
                     "pool holds them; when given, it is the query instead of the prompt and generation above, and "
                     "its assistant turns are what counts.")


def show_turns(turns: list[tuple[str, str]]) -> None:
    """A conversation as chat turns: each turn's role and its text, shown as plain text (never Markdown)."""
    for role, content in turns:
        with st.chat_message(role):
            st.caption(role)
            st.text(content)


def query_sample() -> Sample | None:
    """The typed query as a sample: the conversation when one is given, else prompt + generation; a warning and None
    when it cannot be read or the generation is empty."""
    messages = (st.session_state.get("query_messages") or "").strip()
    if messages:
        try:
            return Sample(messages=json.loads(messages), id="query")
        except json.JSONDecodeError as exc:
            st.warning(f"The conversation is not valid JSON ({md(exc.msg)}, line {exc.lineno}): give a list of "
                       "{role, content} turns.")
        except RecursionError:
            st.warning("The conversation is nested too deeply to read: give a list of {role, content} turns.")
        except InputDataError as exc:  # it quotes the typed roles and keys: shown as text
            st.warning(f"The conversation cannot be used: {md(str(exc))}")
        return None
    prompt = (st.session_state.get("query_prompt") or "").strip()
    completion = (st.session_state.get("query_completion") or "").strip()
    if not completion:
        st.warning("Type the generation to attribute (or let the model generate it from the prompt).")
        return None
    return Sample(prompt=prompt or None, completion=completion, id="query")


TYPE_THEM, UPLOAD_A_FILE = "Type them", "Upload a file"


def typed_or_uploaded(label: str, key: str, text_label: str, max_chars: int, height: int = 150) -> None:
    """Query texts typed (blocks separated by a blank line) or uploaded (JSONL, CSV or Parquet with a text column, or
    prompt and completion): a radio, then the text area or the uploader, under keys `{key}_source`, `{key}_text`,
    `{key}_file`; read them with `read_typed_or_uploaded`."""
    source = st.radio(label, [TYPE_THEM, UPLOAD_A_FILE], horizontal=True, key=f"{key}_source")
    if source == TYPE_THEM:
        st.text_area(text_label, key=f"{key}_text", height=height, max_chars=max_chars)
    else:
        st.file_uploader("JSONL, CSV or Parquet with a text column, or prompt and completion (or messages)",
                         type=UPLOAD_TYPES, key=f"{key}_file")


def read_typed_or_uploaded(key: str, what: str) -> list[Sample]:
    """The samples `typed_or_uploaded(..., key, ...)` holds: the typed blocks, or the uploaded file's rows (held to
    the upload limits, read as a pool file is); an InputDataError naming `what` when there is none."""
    if st.session_state.get(f"{key}_source", TYPE_THEM) == TYPE_THEM:
        if not (st.session_state.get(f"{key}_text") or "").strip():
            raise InputDataError(f"type the {what}")
        return parse_typed_queries(st.session_state[f"{key}_text"])
    upload = st.session_state.get(f"{key}_file")
    if upload is None:
        raise InputDataError(f"upload a file of the {what} first")
    return PoolFile.from_upload(upload).pool().samples


# --- building ---------------------------------------------------------------------------------------------------------

FIELD_NAMES = ("text", "prompt", "completion", "messages", "input", "id", "label")
NO_COLUMN = "(none)"


def field_mapping(df: pd.DataFrame) -> FieldMap:
    """Selectboxes mapping an uploaded table's columns onto the sample fields, prefilled with a guess."""
    columns = [NO_COLUMN, *map(str, df.columns)]
    try:
        guess = FieldMap.guess(list(df.columns))
    except InputDataError:  # no recognisable text column: the user maps it
        guess = FieldMap(text=None, prompt=None, completion=None, id=None, label=None, messages=None, input=None)
    st.markdown("**Field mapping**: the column with the text (or the prompt and the completion, or the conversation's "
                "messages), the id and the label.")
    cols = st.columns(len(FIELD_NAMES))
    picked = {}
    for col, name in zip(cols, FIELD_NAMES, strict=True):
        current = getattr(guess, name) or NO_COLUMN
        picked[name] = col.selectbox(name, columns, index=columns.index(current) if current in columns else 0,
                                     key=f"map_{name}")
    return FieldMap(**{k: (None if v == NO_COLUMN else v) for k, v in picked.items()})


CONFIG_STATE = "rise_config"
"""Session key of the RISE hyperparameters form's state, shared by the pages that show the form (Build index,
Evaluate): the preset picked and every field's value. The widgets are per page (`CONFIG_FORMS`) and start from it:
Streamlit 1.67 reset the number fields of a form kept across pages by widget key (`persist_state`) to their minimum
on a page switch, so Build then Evaluate showed k_r 0 and refused every setting."""
CONFIG_FORMS = ("", "eval_")  # the widget-key prefix of each page's form: Build index, Evaluate


def _config_state() -> dict:
    return st.session_state.setdefault(CONFIG_STATE, {"preset": "default", "values": RiseConfig().to_dict()})


def _keep_field(name: str, key: str) -> None:
    _config_state()["values"][name] = st.session_state[key]


def _keep_preset(key: str) -> None:
    use_build_preset(st.session_state[key])


def use_build_preset(name: str) -> None:
    """Set the hyperparameters form's preset picker and fields to preset `name` (e.g. 'retrospective' once the model
    is a fine-tune on the pool), on every page's form. Call it from a widget's callback (or before the form is
    drawn)."""
    state = _config_state()
    state["preset"], state["values"] = name, PRESETS[name].to_dict()
    for prefix in CONFIG_FORMS:  # each form's widgets start again from the state
        for field_name in ("build_preset", *(f"cfg_{f}" for f in state["values"])):
            st.session_state.pop(prefix + field_name, None)


def config_preset() -> str:
    """The preset last picked in the hyperparameters form ('default' until one is)."""
    return _config_state()["preset"]


def config_form(prefix: str = "") -> RiseConfig:
    """The RISE hyperparameters, prefilled with the defaults (or a preset), each with its help as a tooltip; the
    values are kept across pages (`CONFIG_STATE`). `prefix`: the page's widget keys' prefix (`CONFIG_FORMS`).
    Sizes past `request_limits.ConfigLimits` raise InputDataError."""
    helps, choices = field_help(RiseConfig), field_choices(RiseConfig)
    state = _config_state()
    values = state["values"]
    with st.expander("RISE hyperparameters (hover a field for what it does)"):
        st.selectbox("Preset", list(PRESETS), index=list(PRESETS).index(state["preset"]), key=f"{prefix}build_preset",
                     on_change=_keep_preset, args=(f"{prefix}build_preset",), help=preset_descriptions())
        cols = st.columns(4)
        for i, (name, default) in enumerate(RiseConfig().to_dict().items()):
            key = f"{prefix}cfg_{name}"
            col, value = cols[i % 4], values[name]
            kw = {"key": key, "help": helps[name], "on_change": _keep_field, "args": (name, key)}
            if isinstance(default, bool):
                col.checkbox(name, value=value, **kw)
            elif name in choices:
                col.selectbox(name, choices[name], index=list(choices[name]).index(value), **kw)
            elif isinstance(default, float):
                col.number_input(name, value=float(value), format="%.3f", **kw)
            else:
                col.number_input(name, value=int(value), step=1, **kw)
    return ConfigLimits.from_env().check(RiseConfig(**values))  # a shared server bounds what a form may ask


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
        st.warning(md(job.message()))
    else:
        st.success(md(job.message()))
    return job


@st.fragment(run_every=1.0)
def _live_progress(path: str) -> None:
    job = registry().job(path)
    if job is None or not job.running:
        st.rerun()  # the whole page: show the outcome
    st.progress(job.fraction, text=md(job.message()))
    stop_button(job, "Stop the build", key=f"stop_{path}", disabled=job.stopping,
                help="Stops after the batch in progress; what is done stays in the index and a later build resumes.")


def stop_button(job: BackgroundJob, label: str, key: str, help: str, disabled: bool = False) -> None:
    """A job's Stop button: enabled for whoever may stop it (`BackgroundJob.may_stop`: who started it), and the click
    is checked again on the server, so another session's Stop does nothing to it."""
    user = auth.current_user()
    allowed = job.may_stop(user.name, user.can_edit)
    st.button(label, key=key, on_click=_stop_if_allowed, args=(job,), disabled=disabled or not allowed,
              help=help if allowed else f"Only {md(job.owner)}, who started it, may stop it.")


def _stop_if_allowed(job: BackgroundJob) -> None:
    user = auth.current_user()
    if job.may_stop(user.name, user.can_edit):
        job.stop()
