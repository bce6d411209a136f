# Sourced by the scripts: picks the Python the project runs on and exports it as $PY.
# Inside an activated virtual environment (or with $PYTHON set) that one is used; otherwise a project
# virtual environment in .venv is created and used, so set-up never installs into a system Python
# (PEP 668 "externally managed" interpreters refuse that).
if [ -n "${PYTHON:-}" ]; then
  PY="$PYTHON"
elif [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  PY="$VIRTUAL_ENV/bin/python"
else
  if [ ! -x .venv/bin/python ]; then
    BASE_PY="$(command -v python3 || command -v python || true)"
    if [ -z "$BASE_PY" ]; then
      echo "error: no python3 found; install Python >= 3.10 first" >&2
      exit 1
    fi
    if ! "$BASE_PY" -m venv .venv 2>/dev/null; then
      rm -rf .venv
      # Debian/Ubuntu ship venv separately (python3-venv); install it when we may.
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        "$BASE_PY" -m venv .venv
      else
        echo "error: '$BASE_PY -m venv' failed; install your distribution's venv package (e.g. python3-venv)" >&2
        echo "       or activate a virtual environment of your own, then rerun" >&2
        exit 1
      fi
    fi
  fi
  PY="$PWD/.venv/bin/python"
fi
export PY
