"""An SGLang server child process for the tests and the bench: llama-server's helper (`editor.llamaserver`:
free port, `/health` poll, log shown on failure, process-group teardown) with SGLang's command line.

Why SGLang runs from an interpreter of its own (`EDITLLM_SGLANG`: a venv folder or its python): SGLang pins its
own torch and CUDA packages, so it never shares editllm's environment. On a CPU it runs without its kernel
library (`sgl-kernel` has no CPU wheel on PyPI; SGLang then takes its plain torch layers) and with the
`torch_native` attention backend: see the README's SGLang part for the install.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from editllm.editor.llamaserver import LlamaServer
from editllm.remote.vllmserver import engine_python

ENV = "EDITLLM_SGLANG"
# On CPU: SGLang's CPU device and torch's own attention, no overlap scheduler (a CUDA stream trick),
# llguidance for the copy loop's grammars. The KV pool's size is the caller's (`--max-total-tokens`).
CPU_ARGS = ("--device", "cpu", "--attention-backend", "torch_native", "--sampling-backend", "pytorch",
            "--disable-overlap-schedule", "--grammar-backend", "llguidance")
FAILED = "Received sigquit from a child process"  # SGLang's line when a child process died at start
CPU_ENV = {"SGLANG_USE_CPU_ENGINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def sglang_python(env: str | None = None) -> Path:
    """The interpreter that has SGLang: `$EDITLLM_SGLANG`. EditError when unset or when it cannot import
    sglang (one line: the tests skip on it)."""
    return engine_python(ENV, "sglang", "a venv with SGLang: see the README", env)


class SglangServer(LlamaServer):
    """One SGLang server on a free local port, serving the HF folder `model`; use as a context manager.
    `args` are SGLang's own flags (`--dtype float32`, `--enable-lora ...`); on a CPU `CPU_ARGS` come first."""

    name = "sglang"
    searched_lines = 200  # SGLang logs a long traceback after the bind error
    shown_lines = 40

    def __init__(self, model: str | Path, args: Sequence[str] = (), python: Path | None = None,
                 startup_timeout: float = 600.0, threads: int | None = None, cpu: bool = True) -> None:
        super().__init__(model, [*(CPU_ARGS if cpu else ()), *args], threads=threads,
                         startup_timeout=startup_timeout)
        self.python = python
        self.cpu = cpu
        self.omp_threads = threads  # None: SGLang's own choice

    def command(self) -> list[str]:
        self.python = self.python or sglang_python()  # found once: the check imports sglang (seconds)
        return [str(self.python), "-m", "sglang.launch_server", "--model-path", str(self.model),
                "--host", "127.0.0.1", "--port", str(self.port), *self.args]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.cpu:
            env |= {k: os.environ.get(k, v) for k, v in CPU_ENV.items()}
        if self.omp_threads:
            env["OMP_NUM_THREADS"] = str(self.omp_threads)
        return env

    def failed(self) -> bool:
        """SGLang's scheduler runs in a child process: when it dies (a flag the CPU cannot serve) the server
        logs it and may go on without ever becoming healthy, so the log is read rather than waited out."""
        return FAILED in self.log_tail(self.searched_lines)

    def __enter__(self) -> SglangServer:
        return self.start()
