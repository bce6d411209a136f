#!/usr/bin/env bash
# Set up (if needed) and start the RISE explorer on the embedded default model: http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
exec "$PY" -m streamlit run app.py --server.headless true "$@"
