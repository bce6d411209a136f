"""RISE attribution explorer: the entry point (`streamlit run app.py`) that declares every page, so the sidebar
lists them by title and icon as one product. The pages are the scripts in `app_pages/` (Home is the default)."""

from __future__ import annotations

import streamlit as st

from explorer.plain import md
from explorer.settings_check import settings_errors
from explorer.ui import PAGES

errors = settings_errors()
if errors:  # a limit set to a value it does not allow: say which, before any page runs
    st.error("**The app's settings are not valid; fix these environment variables and start it again:**\n\n"
             + "\n\n".join(md(e) for e in errors), icon=":material/settings:")
    st.stop()
st.navigation([st.Page(p.path, title=p.title, icon=p.icon, default=key == "home") for key, p in PAGES.items()]).run()
