"""HTTP to a serving engine. `HttpClient` is what every backend shares (one-line errors, JSON in and out);
`ServerClient` speaks llama-server: `/completion` with token ids, `/props` for what the server runs,
`/tokenize` to check that it tokenizes like we do. `remote.vllm.VllmClient` speaks vLLM's OpenAI-compatible
API with the same methods and answers in the same shape, so the loops in `remote.modes` serve both.

Errors are `ServerError` (an `EditError`: one line for the user), marked `transient` when trying again may
help (the server is down, restarting, busy or slow, or its answer broke off or was not JSON) so that the
many-files runner retries those and gives up at once on the rest (a request the server refuses, an answer of
another shape than the engine's API: another kind of server).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from editllm.editor.errors import EditError, describe_json

PROBE = "def f(x):\n    return x  # café ✓\n"  # ascii, indentation, non-ascii: where tokenizers differ


class ServerError(EditError):
    """A request to the server failed; `transient`: a retry may succeed (connection, timeout, 5xx)."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class NotJson(ServerError):
    """An answer whose body is not JSON: transient for a request the server must answer (a proxy's error page,
    a cut answer); for a probe of which engine it is, a page of some other server."""


@dataclass(frozen=True)
class ServerInfo:
    """What the server says about itself: its slots, each slot's context, its speculation, its model."""

    url: str
    slots: int
    n_ctx: int  # per slot: `-c` is split between the `-np` slots (vLLM: `--max-model-len`)
    speculative: str | None  # llama-server's `speculative.types` (e.g. "ngram-simple"), None without
    model_path: str
    kind: str = "llama-server"  # which engine: "llama-server" or "vllm" (stats and bench records name it)
    model: str = ""  # the served model's name, where requests must name it (vLLM's `model` field)
    adapters: tuple[str, ...] = ()  # LoRA adapters a request may name (vLLM `--lora-modules NAME=DIR`)


def settings_of(entry: dict) -> dict:
    """llama-server's `params` of a `/props` or `/slots` entry; empty where it has none or another shape."""
    params = entry.get("params")
    return params if isinstance(params, dict) else {}


class HttpClient:
    """One server's URL and JSON over HTTP; the backends add what their engine's API asks for."""

    kind = "server"

    def __init__(self, url: str, timeout: float = 600.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise EditError(f"--server {url}: not an http(s) URL (e.g. http://127.0.0.1:8080)")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._info: ServerInfo | None = None

    def request(self, path: str, body: dict | None = None, timeout: float | None = None) -> dict:
        """GET (no body) or POST JSON; the answer, which must be a JSON object (every engine's API answers
        one; anything else is another server, said in one line). Failures become one-line `ServerError`s."""
        answer = self.request_json(path, body, timeout)
        if not isinstance(answer, dict):
            raise ServerError(f"server {self.url}{path} answered {describe_json(answer)}, not a JSON object",
                              transient=False)
        return answer

    def request_json(self, path: str, body: dict | None = None, timeout: float | None = None) -> Any:
        """`request` for the few answers that may be other JSON (llama-server's `/slots` list). A body that is
        not JSON is transient: a proxy's error page, a restarting server's or a cut answer; a retry may read
        the real one."""
        raw = self._fetch(path, None if body is None else json.dumps(body).encode(), timeout)
        try:
            return json.loads(raw)
        except ValueError as exc:  # JSONDecodeError, or bytes that are no UTF-8/16/32
            start = raw[:60].decode(errors="replace").replace("\n", " ")
            raise NotJson(f"server {self.url}{path}: not a JSON answer ({exc}): {start!r}", transient=True) from exc

    def text(self, path: str, timeout: float | None = None) -> str:
        """GET a plain-text page (vLLM's `/metrics`)."""
        return self._fetch(path, None, timeout).decode(errors="replace")

    def _fetch(self, path: str, data: bytes | None, timeout: float | None) -> bytes:
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                return r.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read().decode(errors="replace").strip().replace("\n", " ")[:200]
            except (http.client.HTTPException, OSError):  # the error page itself broke off
                detail = exc.reason
            raise ServerError(f"server {path}: HTTP {exc.code}: {detail}", transient=exc.code >= 500) from exc
        except http.client.HTTPException as exc:  # cut mid-answer (IncompleteRead), a garbled status line
            raise ServerError(f"server {self.url}{path}: broken HTTP answer ({exc!r})", transient=True) from exc
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerError(f"server {self.url}{path}: {reason}", transient=True) from exc

    def tokenize_body(self, text: str) -> dict:
        """The engine's `/tokenize` request for `text`, without special tokens (each backend states its own)."""
        raise NotImplementedError

    def check_tokenizer(self, tokenizer) -> None:
        """Refuse a server whose model tokenizes differently: our token ids would mean other text there."""
        answer = self.request("/tokenize", self.tokenize_body(PROBE))
        theirs = answer.get("tokens")
        if not isinstance(theirs, list) or not all(isinstance(t, int) for t in theirs):
            raise ServerError(f"server {self.url}/tokenize answered {describe_json(answer)}, not token ids",
                              transient=False)
        ours = tokenizer(PROBE, add_special_tokens=False)["input_ids"]
        if theirs != ours:
            raise ServerError(f"server {self.url} runs a model with another tokenizer than --model "
                              f"(ids for a probe differ: {theirs[:6]} vs {ours[:6]})", transient=False)


class TranslatingClient(HttpClient):
    """An engine whose API differs from llama-server's (vLLM, SGLang): `body` states one greedy continuation in
    its request, `read` turns its answer into llama-server's shape, so `remote.modes` drives every engine alike."""

    generate_path = ""  # where a generation request goes

    def model_cards(self) -> tuple[dict, tuple[str, ...]]:
        """`/v1/models` as both engines list it: the served model's card, and the LoRA adapters a request may
        name (the cards with a parent)."""
        cards = self.request("/v1/models").get("data")
        if not isinstance(cards, list) or not all(isinstance(c, dict) and "id" in c for c in cards):
            raise ServerError(f"server {self.url}/v1/models: data is {describe_json(cards)}, not a list of model "
                              "cards with an id", transient=False)
        base = [c for c in cards if not c.get("parent")]
        if not base:
            raise ServerError(f"server {self.url}: /v1/models lists no model", transient=False)
        return base[0], tuple(str(c["id"]) for c in cards if c.get("parent"))

    def number(self, value: object, what: str) -> int:
        """A count the server states (a context length; 0 where it states none): another shape (a list, a
        word) is a server of another API or version, said in one line rather than an internal error."""
        try:
            if isinstance(value, bool | list | dict):
                raise TypeError
            return int(value or 0)
        except (TypeError, ValueError, OverflowError):
            raise ServerError(f"server {self.url}: {what} is {describe_json(value)}, not a number",
                              transient=False) from None

    def tokenize_body(self, text: str) -> dict:
        """The `/tokenize` request for `text`, without special tokens (vLLM and SGLang read the same fields)."""
        return {"prompt": text, "add_special_tokens": False}

    def body(self, ids: list[int], n_predict: int, *, grammar: str | None = None, stop: list[str] | None = None,
             cache_prompt: bool = True, lora: float | None = None, ban: Iterable[int] = ()) -> dict:
        raise NotImplementedError

    def read(self, answer: dict, wall_ms: float) -> dict:
        """The engine's answer as llama-server's `/completion` (`tokens`, `stop_type`, `timings`)."""
        raise NotImplementedError

    def complete(self, ids: list[int], n_predict: int, *, slot: int = -1, grammar: str | None = None,
                 stop: list[str] | None = None, cache_prompt: bool = True, lora: float | None = None,
                 ban: Iterable[int] = ()) -> dict:
        """One greedy completion, answered as llama-server's is. `slot` is llama-server's: these engines'
        prefix caches serve every request."""
        start = time.perf_counter()
        answer = self.request_json(self.generate_path, self.body(ids, n_predict, grammar=grammar, stop=stop,
                                                                  cache_prompt=cache_prompt, lora=lora, ban=ban))
        if not isinstance(answer, dict | list):  # SGLang may answer a batch of one: `read` takes both
            raise ServerError(f"server {self.url}{self.generate_path} answered {describe_json(answer)}, not a "
                              "completion", transient=False)
        return self.read(answer, (time.perf_counter() - start) * 1000)


class ServerClient(HttpClient):
    """llama-server's requests (thread-safe: no state but the cached props)."""

    kind = "llama-server"
    spec_hint = "--spec-type ngram-simple"  # how to start the server with speculation, for a warning

    def info(self) -> ServerInfo:
        """`/props`, read once: speculation is the server's setting, so the stats say which ran."""
        if self._info is None:
            props = self.request("/props")
            settings = props.get("default_generation_settings", {})
            if not isinstance(settings, dict):
                raise ServerError(f"server {self.url}/props: default_generation_settings is {describe_json(settings)}",
                                  transient=False)
            spec = settings_of(settings).get("speculative.types") or None
            if spec in ("none", ""):
                spec = None
            if spec is None:  # /props shows the sampling defaults only; /slots says whether a slot speculates
                try:
                    slots = self.request_json("/slots")
                except ServerError:
                    slots = []  # `--no-slots`: the completions' draft counts still show it in the stats
                if isinstance(slots, list) and slots and isinstance(slots[0], dict) and slots[0].get("speculative"):
                    spec = settings_of(slots[0]).get("speculative.types") or "server speculation"
            try:
                n_slots, n_ctx = int(props.get("total_slots", 1)), int(settings.get("n_ctx", 0))
            except (TypeError, ValueError) as exc:
                raise ServerError(f"server {self.url}/props: total_slots or n_ctx is not a number ({exc})",
                                  transient=False) from exc
            self._info = ServerInfo(self.url, n_slots, n_ctx, spec, str(props.get("model_path", "")))
        return self._info

    def tokenize_body(self, text: str) -> dict:
        """llama-server's `/tokenize` request for `text`, without special tokens."""
        return {"content": text, "add_special": False}

    def complete(self, ids: list[int], n_predict: int, *, slot: int = -1, grammar: str | None = None,
                 stop: list[str] | None = None, cache_prompt: bool = True, lora: float | None = None,
                 ban: Iterable[int] = ()) -> dict:
        """One greedy `/completion` continuing `ids`; the answer has `tokens` (what it wrote), `stop_type`
        and `timings`. `slot`: the slot whose prompt cache a continuation reuses (-1: any free one);
        `lora`: the scale for adapter 0 (None: leave the field out, for a server without one); `ban`:
        tokens the server must never write (`logit_bias` false)."""
        body: dict = {"prompt": ids, "n_predict": n_predict, "temperature": 0, "top_k": 1, "seed": 0,
                      "return_tokens": True, "cache_prompt": cache_prompt, "id_slot": slot, "stream": False}
        if grammar is not None:
            body["grammar"] = grammar
        if stop:
            body["stop"] = stop
        if lora is not None:
            body["lora"] = [{"id": 0, "scale": lora}]
        if ban:
            body["logit_bias"] = [[t, False] for t in sorted(ban)]
        answer = self.request("/completion", body)
        tokens = answer.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):  # another server
            raise ServerError(f"server {self.url}/completion answered {describe_json(answer)}, without tokens",
                              transient=False)
        return answer
