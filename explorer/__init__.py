"""The Streamlit explorer's own code, beside `app.py` (the entry point) and `app_pages/` (the pages).

One module per concern. The Streamlit glue: `ui` (page scaffolding: the page list, settings, friendly errors),
`resources` (every cache: models, open indexes, builds, the job queue, fitted baselines, query features), `auth`
(who is who: st.login, access tokens, the local editor; viewers and editors), `plain` (the one way outside text
reaches the page: as text, never Markdown or HTML), `widgets` (the shared widgets and forms), and one page section
each in `compare_ui`, `demo_ui`, `finetune_ui`, `shared_spans_ui`, `diagnostics_ui`, `feedback_ui` and
`counterfactual_ui`. Every other module is plain Python over `rise_core`, unit-tested without a script runner:

- `views`: what the pages show -- token highlighting, result tables, ranking comparison, label metrics, exports.
- `uploads`: what people give the pages -- an uploaded (or bundled) pool file, typed queries, typed lines.
- `build_plan`: what the Build index page works out before a build -- file name, size on disk, the pool's slice, who
  may write the index and what must be confirmed.
- `jobs`: index builds in background threads and the read-only indexes shared by the server's sessions.
- `job_queue`: the one queue of the server's heavy work (a global running limit, a per-user limit, the order kept).
- `demo`: the bundled data as the explorer offers it -- the one-click demo and the Evaluate page's task.
- `diagnostics_charts`: the Diagnostics page's tables, headline numbers and plotly figures.
"""
