#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite: tiny models, the real default model (marked slow) and the
# end-to-end browser test (headless Chromium from Debian's packages; installed here when running as root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "note: chromium/chromedriver not found and not root: the browser test will be skipped" >&2
  fi
fi
exec "$PY" -m pytest -q "$@"
