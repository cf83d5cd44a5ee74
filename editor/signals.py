"""Signal handlers for the length of a block: the CLI's SIGTERM/SIGHUP-as-exception and the holding back of every
stop signal (`uninterrupted`: writes, llama.cpp's load) both swap handlers the same way, so they share this swap."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterable, Iterator


@contextlib.contextmanager
def handling(signals: Iterable[int], handler: Callable) -> Iterator[None]:
    """Route each of `signals` to `handler` for the block, then put the old handlers back.

    An ignored signal stays ignored (`nohup editllm ...` must keep running). Python sets handlers only in
    the main thread and runs them only there, so elsewhere the block just runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, handler) for s in signals if signal.getsignal(s) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for s, previous in old.items():
            signal.signal(s, previous)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP back until the block ends, then deliver the first one: a multi-file
    --apply is written whole, and no temp file is left beside a file; llama.cpp's load runs whole too, since
    its log callback is Python code, where a signal's exception would be raised and lost (ctypes drops what a
    callback raises: the run went on and exited 0). Outside the main thread, where no handler can be set,
    the block just runs."""
    held: list[int] = []
    with handling((signal.SIGINT, signal.SIGTERM, signal.SIGHUP), lambda signum, frame: held.append(signum)):
        yield
    if held:  # not when the block failed: its error says what was written, and exits non-zero anyway
        signal.raise_signal(held[0])
