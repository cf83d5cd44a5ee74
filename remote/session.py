"""Connecting a session to a server: the model's tokenizer here, the server's settings there, and a check
that both tokenize alike (our ids must mean the same text on the server)."""

from __future__ import annotations

import time
from collections.abc import Callable

from editllm.remote.client import ServerClient
from editllm.remote.modes import RemoteModel


def model_tokenizer(spec: str, log: Callable[[str], None] | None = None):
    """The tokenizer of the model a server runs, from the same files: a GGUF's metadata (bundled models
    assembled once), else an HF folder or hub id. No weights are loaded."""
    from editllm.editor.models import gguf_of, gguf_tokenizer

    gguf = gguf_of(spec, log)
    if gguf is not None:
        return gguf_tokenizer(gguf)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(spec)


def connect(url: str, spec: str, lora: bool = False, log: Callable[[str], None] | None = None,
            timeout: float = 600.0) -> RemoteModel:
    """A `RemoteModel` for the server at `url` serving `spec` (checked by tokenizing a probe on both sides)."""
    from editllm.editor.models import gguf_of

    start = time.perf_counter()
    client = ServerClient(url, timeout)
    tokenizer = model_tokenizer(spec, log)
    client.check_tokenizer(tokenizer)
    return RemoteModel(client, tokenizer, spec, time.perf_counter() - start, lora, gguf_of(spec, log))
