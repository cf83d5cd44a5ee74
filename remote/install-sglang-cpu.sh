#!/usr/bin/env bash
# A venv with SGLang 0.5.23 for a CPU-only x86 machine (the tests marked `sglang`, the bench's SGLang runs).
# usage: bash remote/install-sglang-cpu.sh VENV   (python3.11: SGLang's wheel is cp311)
#
# Why by hand and not `pip install sglang`: SGLang's wheel pins a CUDA torch (2.14.1) and CUDA kernel packages.
# Its CPU path wants `sgl-kernel` built from SGLang's sources for Xeons with AMX, which PyPI does not carry
# (PyPI's sgl-kernel is a CUDA build: it fails with "No module named 'common_ops'"). Without it SGLang runs its
# plain torch layers (`forward_native`) with the `torch_native` attention backend, which is what editllm needs
# to check the client against a real server. So: the local CPU torch, SGLang without its dependencies, the
# pure-Python ones by name (torch held by a constraint), and two stand-ins:
# - `sgl_kernel`: SGLANG_USE_CPU_ENGINE=1 imports names from it at module level
#   (sglang/kernels/ops/kvcache/cache_move.py); the stand-in's names raise if ever called and it registers no
#   torch ops, so SGLang's AMX check stays false and no layer takes a kernel path.
# - torchvision: PyPI's wheel is a CUDA build whose _C.so cannot load beside the CPU torch, and
#   `sglang.srt.configs` imports torchvision.transforms unconditionally; a meta-path hook declares the two
#   operator schemas (nms, qnms) torchvision's import checks for, before its first import.
set -euo pipefail
VENV=${1:?usage: install-sglang-cpu.sh VENV}
PY=${PYTHON311:-python3.11}
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip)
CON=$(mktemp)
trap 'rm -f "$CON"' EXIT
echo 'torch==2.13.0+cpu' > "$CON"  # nothing may pull a CUDA torch
"${PIP[@]}" install -q --upgrade pip
"${PIP[@]}" install -q torch==2.13.0
"${PIP[@]}" install -q --no-deps sglang==0.5.23
# pip then lists SGLang's CUDA requirements as not installed (cuda-python, flashinfer, ...): expected, not an error.
"${PIP[@]}" install -q -c "$CON" aiohttp anthropic blobfile==3.0.0 compressed-tensors==0.18.0 distro easydict \
  einops fastapi gguf interegular "llguidance<2.0.0,>=1.7.6" msgspec ninja numpy openai==2.8.0 orjson packaging \
  partial_json_parser pillow "prometheus-client>=0.20.0" psutil pybase64 pydantic "python-dateutil<3" \
  python-multipart "pyzmq>=25.1.2" regex requests scipy sentencepiece==0.2.1 setproctitle tiktoken \
  tokenizers==0.23.2 tqdm transformers==5.19.0 "uvicorn>=0.51" uvloop watchfiles xxhash zstandard \
  ipython dill jsonschema soundfile xgrammar==0.2.7 apache-tvm-ffi==0.1.11 triton==3.9.0 torchvision==0.28.0
SP=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$SP/sgl_kernel"
cat > "$SP/sgl_kernel/__init__.py" <<'EOF'
"""A stand-in for SGLang's kernel library on a CPU without its build (editllm's remote/install-sglang-cpu.sh):
every name resolves to a function that raises if called; no torch ops are registered."""
__version__ = "0.0.0+editllm.stand-in"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args, **kwargs):
        raise NotImplementedError(f"sgl_kernel.{name}: not in this CPU install (editllm's stand-in)")

    missing.__name__ = name
    return missing
EOF
cat > "$SP/_editllm_torchvision_ops.py" <<'EOF'
"""Before torchvision's first import: load its operators, or where its (CUDA) build cannot load beside the
CPU torch, declare the two schemas its import checks for (editllm's remote/install-sglang-cpu.sh)."""
import importlib.abc
import importlib.util
import os
import sys


class _Hook(importlib.abc.MetaPathFinder):
    done = False

    def find_spec(self, name, path=None, target=None):
        if name != "torchvision" or _Hook.done:
            return None
        _Hook.done = True
        try:
            import torch

            spec = importlib.util.find_spec("torchvision")
            try:
                torch.ops.load_library(os.path.join(os.path.dirname(spec.origin), "_C.so"))
                return None
            except Exception:
                pass
            if not hasattr(torch.ops.torchvision, "nms"):
                lib = torch.library.Library("torchvision", "DEF")
                lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                _Hook.lib = lib
        except Exception:
            pass
        return None


sys.meta_path.insert(0, _Hook())
EOF
echo "import _editllm_torchvision_ops" > "$SP/zz_editllm_torchvision_ops.pth"
SGLANG_USE_CPU_ENGINE=1 "$VENV/bin/python" -c "import sglang.srt.entrypoints.http_server, sglang.srt.managers.scheduler, \
sglang.srt.models.qwen2, sglang.srt.constrained.llguidance_backend; print('sglang', __import__('sglang').__version__)"
