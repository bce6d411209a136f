"""Page scaffolding shared by the explorer's pages: the page list, the configuration, the page frame (config,
session-state defaults, title) and friendly errors.

The other Streamlit modules: `resources` (everything cached), `widgets` (the shared widgets and forms), `compare_ui`,
`demo_ui`, `finetune_ui` and `diagnostics_ui` (one page's section each). This is the only place that turns exceptions
into messages.

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
from typing import Any

import streamlit as st

from rise_core import bundled
from rise_core.config import ScoreOptions
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

from . import auth
from .job_queue import ServerBusyError
from .plain import md

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
    "query_messages": "",
    "versus_on": False,  # Attribute's "why this and not that" (explorer.contrast_ui)
    "versus_prompt": "",
    "versus_completion": "",
    "lambda_rh": ScoreOptions().lambda_rh,
    "lambda_gh": ScoreOptions().lambda_gh,
    "lambda_hs": ScoreOptions().lambda_hs,
    "sample_norm": ScoreOptions().sample_norm,
    "weighting_auto": ScoreOptions.preset("default").weighting == "auto",
    "top_k": 10,
    "where": "",
    "gen_max_new_tokens": GenerationSettings().max_new_tokens,
    "gen_temperature": GenerationSettings().temperature,
    "gen_top_p": GenerationSettings().top_p,
    "gen_seed": GenerationSettings().seed,
}

HINTS = {
    ModelLoadError: "Check the model id or path: a local Hugging Face checkpoint directory, a hub id (needs network "
    f"access), or '{DEFAULT_MODEL_ID}' for the embedded default.",
    IndexMismatchError: "Use the model this index was built with, or build a new index for this model.",
    IndexStoreError: "Pick another index on the left, or rebuild this one on the Build index page.",
    InputDataError: "Check the input: the text fields, the file format and the field mapping.",
    ConfigError: "Fix the value and try again.",
    ServerBusyError: "The server runs a limited number of heavy jobs at once (docs/SECURITY.md, \"Jobs\").",
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
    with friendly("check who you are", stop=True):
        user = auth.current_user()  # the login, when the server has one (stops the page until then)
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.title(f"{icon} {title}")
    if user.via != "local":
        st.sidebar.caption(f"{md(user.name)} · {user.role}")
        if user.via == "oidc":
            st.sidebar.button("Log out", on_click=st.logout, key="auth_logout")
    return settings()


@contextmanager
def friendly(action: str, stop: bool = False) -> Iterator[None]:
    """Show errors raised inside the block as a message saying what to do, never as a traceback.

    With `stop`, the page ends after the message (for steps the rest of the page depends on)."""
    try:
        yield
    except RiseError as exc:
        hint = next((h for cls, h in HINTS.items() if isinstance(exc, cls)), "")
        st.error(f"**Could not {action}.** {md(exc)}" + (f"\n\n{hint}" if hint else ""), icon=":material/warning:")
    except Exception as exc:  # noqa: BLE001 - unexpected: log the traceback for developers, show a message
        logger.exception("unexpected error while trying to %s", action)
        st.error(f"**Could not {action}:** unexpected {md(type(exc).__name__)}: {md(exc)}\n\n"
                 "This looks like a bug; the details are in the server log. Try again, or reload the page.",
                 icon=":material/bug_report:")
    else:
        return
    if stop:
        st.stop()
