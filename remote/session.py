"""Connecting a session to a server: which engine it is, the model's tokenizer here, the server's settings
there, and a check that both tokenize alike (our ids must mean the same text on the server).

Which engine is asked of the server itself, so `--server URL` needs nothing else: llama-server answers
`/props`; vLLM and SGLang have no `/props` and list their models at `/v1/models` as `owned_by: "vllm"` or
`"sglang"`. A caller that knows may say so (`kind`), and no probe is sent."""

from __future__ import annotations

import time
from collections.abc import Callable

from editllm.editor.errors import describe_json
from editllm.remote.client import HttpClient, NotJson, ServerClient, ServerError
from editllm.remote.modes import RemoteModel
from editllm.remote.sglang import SglangClient
from editllm.remote.vllm import VllmClient

KINDS = {"llama-server": ServerClient, "vllm": VllmClient, "sglang": SglangClient}


def open_client(url: str, kind: str = "auto", timeout: float = 600.0) -> HttpClient:
    """The client for the server at `url`: `kind` "llama-server", "vllm" or "sglang", or "auto" to ask the
    server. `timeout` (seconds) bounds each request, the probes here included, so a caller can bound a connect
    to a server that accepts and never answers."""
    if kind != "auto":
        if kind not in KINDS:
            raise ServerError(f"unknown server kind {kind!r}; choose one of auto, {', '.join(KINDS)}",
                              transient=False)
        return KINDS[kind](url, timeout)
    probe = HttpClient(url, timeout)
    seen: list[str] = []  # what each probe answered, for the error where neither engine's answer came
    for path in ("/props", "/v1/models"):
        try:
            answer = probe.request_json(path)
        except ServerError as exc:
            if exc.transient and not (path == "/props" and isinstance(exc, NotJson)):
                raise  # down or busy: the runner may retry; a 404, or a page at /props, means another engine
            seen.append(str(exc).removeprefix("server "))
            continue
        if path == "/props" and isinstance(answer, dict) and isinstance(answer.get("default_generation_settings"),
                                                                         dict):
            return ServerClient(url, timeout)
        if path == "/v1/models" and (owner := served_by(answer)):
            return KINDS[owner](url, timeout)
        seen.append(f"{path} answered {describe_json(answer)}")
    raise ServerError(f"server {url} is neither a llama-server (/props) nor a vLLM or SGLang server (/v1/models "
                      f"owned by vllm or sglang): {'; '.join(seen)}", transient=False)


def served_by(models: object) -> str | None:
    """"vllm" or "sglang" where a `/v1/models` answer lists a model owned by that engine, else None (another
    OpenAI-compatible server, or no such list)."""
    cards = models.get("data") if isinstance(models, dict) else None
    owners = {c.get("owned_by") for c in cards if isinstance(c, dict)} if isinstance(cards, list) else set()
    return next((owner for owner in ("vllm", "sglang") if owner in owners), None)


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
    `kind`: the engine ("llama-server", "vllm", "sglang"), or "auto" to ask the server; `timeout` (seconds):
    each request's bound, the connect's probes included (a server that accepts and never answers must not hold
    a caller that was given a deadline), and the client's for the requests after."""
    from editllm.editor.models import gguf_of

    start = time.perf_counter()
    client = open_client(url, kind, timeout)
    tokenizer = model_tokenizer(spec, log)
    client.check_tokenizer(tokenizer)
    return RemoteModel(client, tokenizer, spec, time.perf_counter() - start, lora, gguf_of(spec, log))
