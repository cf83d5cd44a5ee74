"""Batch-invariant llama.cpp kernels: a token's logits that do not depend on what it was decoded with.

Why: llama.cpp's CPU kernels choose their code path by the shape of a batch, and the paths round
differently. A token decoded alone goes through one matrix-vector kernel, the same token inside a draft,
a prompt or another file's batch through a matrix-matrix kernel, so its logits differ by ~1e-6 per layer
and up to ~0.5 at the output (bundled 1.5B). At a near-tie that flips the argmax: spec drifts from rewrite
(its drafts are verified in batches), and a copy program written through llama-server (a token a step) from
the same program written locally (drafted tags, forced tokens in one forward).

Four things choose a shape-dependent path on the CPU (llama.cpp as llama-cpp-python 0.3.36 vendors it):
- repacked weights (`use_extra_bufts`, the server's `--no-repack`): Q4_K rows go through a 4-row gemm and
  the leftover rows through a gemv that sums in another order;
- the tiled K-quant matmul, taken from 8 rows up (`GGML_CPU_TILED_MM=0` turns it off; ggml reads the
  variable once per process, at its first matrix product);
- flash attention: one query over 512+ cached tokens is split across threads, 16+ queries are tiled, the
  rest go row by row;
- llamafile's sgemm, which multiplies F16/F32 matrices of 2+ columns (attention without flash attention)
  while one column goes through ggml's dot product: compiled in or out (`GGML_LLAMAFILE`), so editllm's
  builds leave it out. With flash attention on, as by default, it serves no tensor of a K-quant model.

With all four off every matrix product is ggml's row-by-row dot product, whose sum order depends on the
row alone: a token's logits are bit for bit the same in any batch (checked per layer on the bundled 1.5B).
The price (bundled 1.5B, 2 cores, `benchmarks/results/cpu-1.5b-invariance/`): prompt reading at 0.57x the
default speed, a decode step 85 against 70 ms, spec edits of 12 held-out short functions 1.67x the time. So the
default stays fast and this is a choice, `--batch-invariant`: where spec must equal rewrite exactly, or a server
must write what the local engine writes. Files decoded together (`--jobs`, one shared cache) are not covered:
attention sums a row's cache cells in groups of 8 by their place in the cache, and another file's cells shift
those places.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TILED_VAR = "GGML_CPU_TILED_MM"  # ggml's switch for its tiled K-quant matmul (read once per process)
MARK = "EDITLLM_GGML_CPU_TILED_MM"  # present when TILED_VAR was set by editllm, not by the user
FLASH_ATTN_DISABLED = 0  # llama.h LLAMA_FLASH_ATTN_TYPE_DISABLED
SERVER_ARGS = ("--no-repack", "--flash-attn", "off")  # llama-server's flags for the same kernels
LLAMAFILE_ON = "LLAMAFILE = 1"  # what llama.cpp's system info (and llama-server's log) says when sgemm is in
_CHOSEN: list[bool] = []  # the kernels this process's first llama.cpp engine took (True: invariant)


def build_refusal(system_info: str) -> str | None:
    """Why this llama.cpp build cannot run batch-invariant (None: it can)."""
    if LLAMAFILE_ON in system_info:
        return ("this llama.cpp build has llamafile's sgemm, whose sums depend on the batch; rebuild "
                "llama-cpp-python with CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_LLAMAFILE=OFF' (make install does)")
    return None


def program_refusal(binary: str | Path) -> str | None:
    """Why the llama.cpp program `binary` (llama-server) cannot run batch-invariant, asked of the ggml CPU
    library beside it (`ggml_cpu_has_llamafile`), in a child process: a second ggml loaded into this one
    would share sonames with the bindings'. None: it can, or there is no library to ask (a static build)."""
    folders = (Path(binary).parent, Path(binary).parent.parent / "lib")
    libraries = sorted(lib for folder in folders for lib in folder.glob("libggml-cpu*.so*"))
    if not libraries:
        return None
    code = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).ggml_cpu_has_llamafile())"
    done = subprocess.run([sys.executable, "-c", code, str(libraries[0])], capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip() == "1":
        return ("it was built with llamafile's sgemm, whose sums depend on the batch: rebuild it with "
                "-DGGML_LLAMAFILE=OFF")
    return None


def choose(invariant: bool) -> None:
    """Fix this process's kernels before llama.cpp's first matrix product (ggml reads the switch once).

    The first engine decides; a later engine that asks for the other kernels is refused, since its
    outputs (and measured costs) would silently be the first one's."""
    from editllm.editor.errors import EditError

    if _CHOSEN and _CHOSEN[0] != invariant:
        raise EditError(f"llama.cpp's kernels are chosen once per process: this one runs the "
                        f"{'batch-invariant' if _CHOSEN[0] else 'default'} kernels already")
    if not _CHOSEN:
        if invariant and os.environ.get(TILED_VAR) != "0":
            os.environ[TILED_VAR] = os.environ[MARK] = "0"
        _CHOSEN.append(invariant)


def server_environment(env: dict[str, str], invariant: bool) -> dict[str, str]:
    """A llama.cpp program's environment: the tiled matmul off for batch-invariant kernels, else as the user
    left it (editllm's own setting, made for this process's engine, is not passed on)."""
    env = dict(env)
    if os.environ.get(MARK) is not None and env.get(TILED_VAR) == os.environ[MARK]:
        env.pop(TILED_VAR, None)
    env.pop(MARK, None)
    if invariant:
        env[TILED_VAR] = "0"
    return env
