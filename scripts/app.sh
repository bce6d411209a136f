#!/usr/bin/env bash
# Set up (if needed) and start the RISE explorer on the embedded default model: http://localhost:8501
# It listens on 127.0.0.1 only; RISE_APP_ADDRESS=0.0.0.0 serves it to the network (read docs/SECURITY.md first).
# Serving, Streamlit's file watcher is off (it would watch every source file for nothing); RISE_DEV=1 keeps it on, so
# an edited page reloads while developing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
watcher=none
if [ "${RISE_DEV:-0}" = 1 ]; then watcher=auto; fi
# RISE_MAX_UPLOAD_MB (default 50) is both Streamlit's upload limit and the app's own check (rise_core/ingest_limits.py).
exec "$PY" -m streamlit run app.py --server.headless true --server.address "${RISE_APP_ADDRESS:-127.0.0.1}" \
  --server.maxUploadSize "${RISE_MAX_UPLOAD_MB:-50}" \
  --server.fileWatcherType "$watcher" \
  "$@"
