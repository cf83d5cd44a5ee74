"""Connecting a session to a server: which engine it is, the model's tokenizer here, the server's settings
there, and a check that both tokenize alike (our ids must mean the same text on the server).

Which engine is asked of the server itself, so `--server URL` needs nothing else: llama-server answers
`/props`; vLLM and SGLang have no `/props` and list their models at `/v1/models` as `owned_by: "vllm"` or
`"sglang"`. A caller that knows may say so (`kind`), and no probe is sent."""

from __future__ import annotations

import time
from collections.abc import Callable

from editllm.remote.client import HttpClient, ServerClient, ServerError
from editllm.remote.modes import RemoteModel
from editllm.remote.sglang import SglangClient
from editllm.remote.vllm import VllmClient

KINDS = {"llama-server": ServerClient, "vllm": VllmClient, "sglang": SglangClient}


def open_client(url: str, kind: str = "auto", timeout: float = 600.0) -> HttpClient:
    """The client for the server at `url`: `kind` "llama-server", "vllm" or "sglang", or "auto" to ask the
    server."""
    if kind != "auto":
        if kind not in KINDS:
            raise ServerError(f"unknown server kind {kind!r}; choose one of auto, {', '.join(KINDS)}",
                              transient=False)
        return KINDS[kind](url, timeout)
    probe = HttpClient(url, timeout)
    try:
        props = probe.request("/props")
        if isinstance(props, dict) and "default_generation_settings" in props:
            return ServerClient(url, timeout)
    except ServerError as exc:
        if exc.transient:  # down or busy: the runner may retry; a 404 means another engine
            raise
    try:
        cards = probe.request("/v1/models").get("data", [])
    except ServerError as exc:
        if exc.transient:
            raise
        cards = []
    owners = {c.get("owned_by") for c in cards if isinstance(c, dict)}
    for owner in ("vllm", "sglang"):
        if owner in owners:
            return KINDS[owner](url, timeout)
    raise ServerError(f"server {url} is neither a llama-server (/props) nor a vLLM or SGLang server "
                      "(/v1/models owned by vllm or sglang)", transient=False)


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
            timeout: float = 600.0, kind: str = "auto") -> RemoteModel:
    """A `RemoteModel` for the server at `url` serving `spec` (checked by tokenizing a probe on both sides);
    `kind`: the engine ("llama-server", "vllm", "sglang"), or "auto" to ask the server."""
    from editllm.editor.models import gguf_of

    start = time.perf_counter()
    client = open_client(url, kind, timeout)
    tokenizer = model_tokenizer(spec, log)
    client.check_tokenizer(tokenizer)
    return RemoteModel(client, tokenizer, spec, time.perf_counter() - start, lora, gguf_of(spec, log))
