#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite (tiny models, the real default model, the browser test).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m pytest -q "$@"
