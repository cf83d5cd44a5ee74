"""HTTP to an SGLang server (`python -m sglang.launch_server`): its native `/generate` with token ids,
`/v1/models` and `/server_info` for what it runs, `/tokenize` for the tokenizer check.

Why a client of its own: `remote.modes` drives rewrite, spec and the copy loop through
`client.complete(ids, n, ...)` and reads llama-server's answer (`tokens`, `stop_type`, `timings`). This client
sends SGLang's request for the same thing and answers in that shape, so the loops stay one.

What maps to what, and why:
- the prompt is `input_ids` (SGLang's token-id form): nothing is re-tokenized; the answer's `output_ids` are the
  ids it wrote, ending with the end token or the whole token that completed a stop string, as llama-server's
  `tokens` do (the client cuts where its own stop rule says). `no_stop_trim` only keeps the answer's `text`
  uncut, which the client does not read.
- greedy is `temperature: 0` (SGLang then samples with top_k 1), and every penalty is stated: SGLang takes a
  model's `generation_config.json` as the request defaults (Qwen2.5's `repetition_penalty` 1.05 would change
  greedy's choices).
- `grammar` goes as `sampling_params.ebnf` to a server started with `--grammar-backend llguidance`: SGLang's
  llguidance backend reads it with `llguidance.grammar_from("ebnf", ...)`, which takes Lark or llama.cpp's GBNF
  (converted by `any_to_lark`), so the copy loop's GBNF (`remote.gbnf`) goes as it is. (Its default backend,
  xgrammar, reads GBNF too, with other limits: the tests and the bench use llguidance, as with vLLM.)
- a slot does not exist: SGLang's radix cache is shared by all requests and keyed by tokens (one token a page
  on CPU), so a continuation reads only its new tokens. `cache_prompt=False` becomes a fresh `cache_salt`.
- `lora` 1.0 names the adapter as the request's `lora_path` (`--enable-lora --lora-paths NAME=DIR`), anything
  else the base model; `ban` is `logit_bias` -100.
- speculation is the server's (`--speculative-algorithm NGRAM`, CUDA only in SGLang 0.5): `/server_info` says
  which; an answer's `spec_num_proposed_drafts` / `spec_num_correct_drafts` become llama-server's `draft_n` /
  `draft_n_accepted`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from editllm.remote.client import ServerError, ServerInfo, TranslatingClient

GREEDY = {"temperature": 0, "top_p": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0,
          "presence_penalty": 0.0, "frequency_penalty": 0.0}


class SglangClient(TranslatingClient):
    """SGLang's requests, answered in llama-server's shape (thread-safe: no state but the cached info)."""

    kind = "sglang"
    generate_path = "/generate"
    spec_hint = "--speculative-algorithm NGRAM (CUDA only)"

    def info(self) -> ServerInfo:
        """`/v1/models` (the served model and its context; LoRA adapters: the cards with a parent) and
        `/server_info` (its speculation), read once. One "slot": the radix cache serves every request."""
        if self._info is None:
            card, adapters = self.model_cards()
            settings = self._server_info()
            spec = settings.get("speculative_algorithm") or None
            n_ctx = self.number(card.get("max_model_len"), "/v1/models max_model_len") or self.number(
                settings.get("context_length"), "/server_info context_length")
            self._info = ServerInfo(self.url, 1, n_ctx, None if spec in (None, "", "NONE") else f"sglang {spec}",
                                    str(settings.get("model_path") or card.get("root") or card["id"]),
                                    kind=self.kind, model=str(card["id"]), adapters=adapters)
        return self._info

    def _server_info(self) -> dict:
        """The server's settings: `/server_info` (SGLang >= 0.5), else the older `/get_server_info`."""
        try:
            return self.request("/server_info")
        except ServerError as exc:
            if exc.transient:
                raise
            return self.request("/get_server_info")

    def body(self, ids: list[int], n_predict: int, *, grammar: str | None = None, stop: list[str] | None = None,
             cache_prompt: bool = True, lora: float | None = None, ban: Iterable[int] = ()) -> dict:
        """The `/generate` request for one greedy continuation of `ids` (see the module's notes)."""
        params: dict = {**GREEDY, "max_new_tokens": n_predict, "skip_special_tokens": False, "no_stop_trim": True}
        if grammar is not None:
            params["ebnf"] = grammar
        if stop:
            params["stop"] = stop
        if ban:
            params["logit_bias"] = {str(t): -100 for t in sorted(ban)}
        body: dict = {"input_ids": ids, "sampling_params": params, "stream": False}
        if lora == 1.0:
            adapters = self.info().adapters
            if len(adapters) != 1:
                raise ServerError(f"server {self.url}: the adapter needs exactly one LoRA module "
                                  f"(--enable-lora --lora-paths NAME=DIR); it lists {list(adapters)}",
                                  transient=False)
            body["lora_path"] = adapters[0]
        if not cache_prompt:
            body["cache_salt"] = uuid.uuid4().hex  # a salt no cached prefix carries: the prompt is read anew
        return body

    def read(self, answer: dict, wall_ms: float) -> dict:
        return as_llama_answer(answer, wall_ms)


def as_llama_answer(answer: dict, wall_ms: float) -> dict:
    """SGLang's `/generate` answer in llama-server's shape: `tokens` written (`output_ids`), `stop_type` ("eos":
    a stop token matched; "word": a stop string; "limit": max_new_tokens) and `timings` (the request's wall
    time; the prompt's tokens and how many the radix cache held; speculation's counts where it ran)."""
    if isinstance(answer, list):  # a batch of one
        answer = answer[0] if answer else {}
    if answer.get("output_ids") is None:
        error = answer.get("error") or answer.get("message")
        raise ServerError(f"server /generate: no output_ids in the answer{f' ({error})' if error else ''}",
                          transient=False)
    meta = answer.get("meta_info") or {}
    finish = meta.get("finish_reason") or {}
    kind = finish.get("type") if isinstance(finish, dict) else None
    if kind == "length":
        stop_type = "limit"
    elif kind == "stop":
        stop_type = "word" if isinstance(finish.get("matched"), str) else "eos"
    else:  # "abort" (a grammar the server refused, a request it gave up on) or no reason at all
        message = finish.get("message", "") if isinstance(finish, dict) else ""
        refused = isinstance(finish, dict) and int(finish.get("status_code") or 500) < 500
        raise ServerError(f"server /generate: finish_reason {kind!r} {message}".rstrip(), transient=not refused)
    tokens = [int(t) for t in answer["output_ids"]]
    timings = {"prompt_ms": 0.0, "predicted_ms": wall_ms, "predicted_n": len(tokens),
               "prompt_n": int(meta.get("prompt_tokens") or 0)}
    if meta.get("cached_tokens") is not None:
        timings["cache_n"] = int(meta["cached_tokens"])
    if meta.get("spec_num_proposed_drafts") is not None:
        timings["draft_n"] = int(meta["spec_num_proposed_drafts"])
        timings["draft_n_accepted"] = int(meta.get("spec_num_correct_drafts") or 0)
    return {"tokens": tokens, "stop_type": stop_type, "timings": timings}
