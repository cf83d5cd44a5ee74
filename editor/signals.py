"""Signal handlers for the length of a block: the CLI's SIGTERM/SIGHUP-as-exception and the writes' holding
back of every stop signal both swap handlers the same way, so they share this one swap."""

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
