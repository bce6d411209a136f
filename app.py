"""RISE attribution explorer: the entry point (`streamlit run app.py`) that declares every page, so the sidebar
lists them by title and icon as one product. The pages are the scripts in `app_pages/` (Home is the default)."""

from __future__ import annotations

import streamlit as st

from explorer.ui import PAGES

st.navigation([st.Page(p.path, title=p.title, icon=p.icon, default=key == "home") for key, p in PAGES.items()]).run()
