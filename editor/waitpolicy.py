"""OpenMP's wait policy: passive for torch, libgomp's default (spin briefly, then sleep) for llama.cpp.

Why both: torch and llama.cpp both run their threads on libgomp, and the two ask opposite things of it. With
the default policy, torch's two threads on two shared cores ran 4-6× slower here, so the CLI asks for passive
waiting. With passive waiting, llama.cpp's threads sleep at every graph node's barrier: a decode step of the
bundled 1.5B went from 25.0 to 41.2 ms on the llama.cpp engine, and llama-bench's tg32 from 39.4 to 26.5
tokens/s (AMD EPYC, 2 cores; `benchmarks/results/cpu-1.5b-wait-policy/`).

libgomp reads `OMP_WAIT_POLICY` once, when the process loads it, and a process loads one copy (torch's and
the system's share the soname `libgomp.so.1`). So: `prefer_passive` sets the variable where the user has not
(marking it as editllm's own); the llama.cpp engine loads llama.cpp inside `llama_defaults` (without the
variable, when libgomp is not loaded yet: torch, imported later in that process, then shares that copy); and
llama.cpp's tools run as subprocesses get `user_environment`, the environment without editllm's default.
A policy the user sets is always kept, everywhere.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

VAR = "OMP_WAIT_POLICY"
MARK = "EDITLLM_OMP_WAIT_POLICY_DEFAULT"  # present when VAR is editllm's default, not the user's choice
_LOADED: dict[str, str | None] = {}  # the policy libgomp took when llama.cpp was loaded ("default": none)


def prefer_passive() -> None:
    """Ask for passive waiting unless the user chose a policy (before torch is imported)."""
    if VAR not in os.environ:
        os.environ[VAR] = "PASSIVE"
        os.environ[MARK] = "PASSIVE"


def ours() -> bool:
    """Whether the wait policy in the environment is editllm's default rather than the user's."""
    return os.environ.get(MARK) is not None and os.environ.get(VAR) == os.environ.get(MARK)


def user_environment() -> dict[str, str]:
    """This process's environment without editllm's default policy: for llama.cpp's own programs."""
    env = dict(os.environ)
    if ours():
        env.pop(VAR, None)
    env.pop(MARK, None)
    return env


def libgomp_loaded() -> bool:
    """Whether this process has loaded libgomp already (its policy is then fixed)."""
    try:
        return "libgomp" in Path("/proc/self/maps").read_text()
    except OSError:
        return True  # cannot tell: leave the environment alone


@contextlib.contextmanager
def llama_defaults() -> Iterator[None]:
    """Load llama.cpp inside this: without editllm's passive default, where libgomp is not loaded yet."""
    if not ours() or libgomp_loaded():
        _LOADED.setdefault("llama", os.environ.get(VAR, "default"))
        yield
        return
    policy = os.environ.pop(VAR)
    _LOADED.setdefault("llama", "default")
    try:
        yield
    finally:
        os.environ[VAR] = policy


def llama_policy() -> str | None:
    """The wait policy llama.cpp runs under in this process (None before it is loaded): its measured costs
    (`editor.costs`) depend on it, 1.6× on a decode step."""
    return _LOADED.get("llama")
