"""The Streamlit explorer's own code, beside `app.py` (the entry point) and `app_pages/` (the pages).

One module per concern. Only `explorer.ui` (page scaffolding, cached resources, widgets) and `explorer.diagnostics_ui`
(the Diagnostics page's form, run and sections) import streamlit; every other module is plain Python over
`rise_core`, unit-tested without a script runner:

- `views`: what the pages show -- token highlighting, result tables, ranking comparison, label metrics, exports.
- `uploads`: what people give the pages -- an uploaded (or bundled) pool file, typed queries, typed lines.
- `build_plan`: what the Build index page works out before a build -- file name, size on disk, the pool's slice.
- `jobs`: index builds in background threads and the read-only indexes shared by the server's sessions.
- `demo`: the bundled data as the explorer offers it -- the one-click demo and the Evaluate page's task.
- `diagnostics_charts`: the Diagnostics page's tables, headline numbers and plotly figures.
"""
