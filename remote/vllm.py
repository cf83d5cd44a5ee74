"""HTTP to a vLLM server (`vllm serve`, OpenAI-compatible): `/v1/completions` with token ids, `/v1/models`
and `/metrics` for what it runs, `/tokenize` for the tokenizer check.

Why a client of its own rather than a mode of its own: `remote.modes` drives rewrite, spec and the copy loop
through `client.complete(ids, n, ...)` and reads llama-server's answer (`tokens`, `stop_type`, `timings`).
This client sends vLLM's request for the same thing and answers in that shape, so the loops stay one.

What maps to what, and why:
- the prompt is a list of token ids (vLLM's token-id prompt form): nothing is re-tokenized; `return_token_ids`
  (vLLM >= 0.10) gives back the ids it wrote, the end-of-generation token included.
- greedy is `temperature: 0`, and every penalty is stated: vLLM takes a model's `generation_config.json` as
  the request defaults (Qwen2.5's `repetition_penalty` 1.05 would change greedy's choices).
- `grammar` goes as `structured_outputs: {"grammar": ...}` (the server started with
  `--structured-outputs-config '{"backend":"guidance"}'`). vLLM's guidance backend reads it with
  `llguidance.grammar_from("grammar", ...)`, which takes Lark or llama.cpp's GBNF (converted by
  `any_to_lark`), so the copy loop's GBNF (`remote.gbnf`) goes as it is. The legacy `guided_grammar` field
  is dropped by vLLM with only a warning: never sent.
- a slot does not exist: vLLM's prefix cache (automatic prefix caching) is shared by all requests and keyed
  by blocks of tokens, so a continuation re-reads at most one block (`--block-size`; 128 by default on CPU,
  so start it with `--block-size 32`). `cache_prompt=False` becomes a fresh `cache_salt`: no cached prefix.
- `lora` 1.0 names the adapter as the request's `model` (`--enable-lora --lora-modules NAME=DIR`), anything
  else the base model; `ban` is `logit_bias` -100.
- speculation is the server's (`--speculative-config`): `/metrics` shows its counters only when it is on;
  the per-request counts (`--per-request-spec-decode-metrics summary`: drafted and accepted tokens) become
  llama-server's `draft_n` / `draft_n_accepted`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from editllm.remote.client import ServerError, ServerInfo, TranslatingClient

GREEDY = {"temperature": 0, "top_p": 1.0, "top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0,
          "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": 0}
SPEC_METRIC = "vllm:spec_decode_num_drafts"  # a counter vLLM registers only with `--speculative-config`


class VllmClient(TranslatingClient):
    """vLLM's requests, answered in llama-server's shape (thread-safe: no state but the cached info)."""

    kind = "vllm"
    generate_path = "/v1/completions"
    spec_hint = """--speculative-config '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}'"""

    def info(self) -> ServerInfo:
        """`/v1/models` (the base model: name, path, context; LoRA adapters: those with a parent) and
        `/metrics` (whether it speculates), read once."""
        if self._info is None:
            card, adapters = self.model_cards()
            n_ctx = self.number(card.get("max_model_len"), "/v1/models max_model_len")
            self._info = ServerInfo(self.url, 1, n_ctx, self._speculative(),
                                    str(card.get("root") or card["id"]), kind=self.kind, model=str(card["id"]),
                                    adapters=adapters)
        return self._info

    def _speculative(self) -> str | None:
        """"vllm speculative decoding" when `/metrics` has the speculation counters, else None."""
        try:
            text = self.text("/metrics")
        except ServerError:
            return None  # metrics off: the answers' acceptance counts still show it in the stats
        return "vllm speculative decoding" if SPEC_METRIC in text else None

    def body(self, ids: list[int], n_predict: int, *, grammar: str | None = None, stop: list[str] | None = None,
             cache_prompt: bool = True, lora: float | None = None, ban: Iterable[int] = ()) -> dict:
        """The `/v1/completions` request for one greedy continuation of `ids` (see the module's notes)."""
        info = self.info()
        model = info.model
        if lora == 1.0:
            if len(info.adapters) != 1:
                raise ServerError(f"server {self.url}: the adapter needs exactly one LoRA module "
                                  f"(--enable-lora --lora-modules NAME=DIR); it lists {list(info.adapters)}",
                                  transient=False)
            model = info.adapters[0]
        body: dict = {"model": model, "prompt": ids, "max_tokens": n_predict, **GREEDY, "n": 1, "stream": False,
                      "return_token_ids": True, "skip_special_tokens": False}
        if grammar is not None:
            body["structured_outputs"] = {"grammar": grammar}
        if stop:
            body["stop"] = stop
        if not cache_prompt:
            body["cache_salt"] = uuid.uuid4().hex  # a salt no cached block carries: the prompt is read anew
        if ban:
            body["logit_bias"] = {str(t): -100 for t in sorted(ban)}
        return body

    def read(self, answer: dict, wall_ms: float) -> dict:
        return as_llama_answer(answer, wall_ms)


def as_llama_answer(answer: dict, wall_ms: float) -> dict:
    """vLLM's completion in llama-server's shape: `tokens` written, `stop_type` ("eos": an end token, which
    `token_ids` includes; "word": a stop string, the token that completed it included; "limit": max_tokens)
    and `timings` (the request's wall time, split at the first token where the server reports it)."""
    choices = answer.get("choices") or []
    if not choices or choices[0].get("token_ids") is None:
        raise ServerError("server /v1/completions: no token_ids in the answer (vLLM >= 0.10 returns them "
                          "with return_token_ids)", transient=False)
    choice = choices[0]
    finish, reason = choice.get("finish_reason"), choice.get("stop_reason")
    if finish == "length":
        stop_type = "limit"
    elif finish == "stop":
        stop_type = "word" if isinstance(reason, str) else "eos"
    else:  # "abort", "error": the server gave up on the request
        raise ServerError(f"server /v1/completions: finish_reason {finish!r}", transient=True)
    tokens = [int(t) for t in choice["token_ids"]]
    metrics = answer.get("metrics") or {}
    prompt_ms = float(metrics.get("time_to_first_token_ms") or 0.0)
    timings = {"prompt_ms": prompt_ms, "predicted_ms": max(0.0, wall_ms - prompt_ms), "predicted_n": len(tokens),
               "prompt_n": int((answer.get("usage") or {}).get("prompt_tokens", 0))}
    cached = ((answer.get("usage") or {}).get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is not None:
        timings["cache_n"] = int(cached)
    spec = metrics.get("speculative_decoding") or {}
    if spec.get("num_draft_tokens") is not None:
        timings["draft_n"] = int(spec["num_draft_tokens"])
        timings["draft_n_accepted"] = int(spec.get("num_accepted_draft_tokens") or 0)
    elif spec.get("acceptance_histogram"):  # verify steps that accepted exactly j drafted tokens, j = 0..k
        histogram = spec["acceptance_histogram"]
        timings["draft_n"] = sum(histogram) * (len(histogram) - 1)
        timings["draft_n_accepted"] = sum(j * n for j, n in enumerate(histogram))
    return {"tokens": tokens, "stop_type": stop_type, "timings": timings}
