"""A light tokenizer for GGUF models: transformers' tokenizer without importing transformers.

Why: on the llama.cpp path the model loads in about a second, but `import transformers` plus
`AutoTokenizer` costs 2-7 s on a busy 2-core machine, and the tokenizer is the only thing that path
needs from it. The token ids must stay exactly transformers' (the prompt builder, drafter, matcher and
resolver all speak them), so nothing here re-derives the pipeline: the one-time conversion that
already runs transformers (`editor.models.gguf_tokenizer`) also saves

- `editllm-runtime.json`: the `tokenizers` pipeline exactly as transformers runs it (its tokenizer
  class may reset parts on load: Qwen2Tokenizer adds an NFC normalizer that its saved tokenizer.json
  lacks), and
- `editllm-meta.json`: the chat template, the special tokens and the sizes transformers reports,

after checking that a `LightTokenizer` built from them gives transformers' ids, text and prompts on a
set of probes. A tokenizer that fails the check is marked unverified and keeps loading through
transformers. Later loads read the two files: `tokenizers` (Rust) and, at the first prompt, jinja2.
The pipeline (~0.7 s of CPU for Qwen's 151k tokens) is read in a thread, while llama.cpp maps the model.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from editllm.editor.cachefs import publish_file

RUNTIME = "editllm-runtime.json"
META = "editllm-meta.json"
FORMAT = 1  # bump when the files' meaning changes: older ones are rebuilt

# Text on which the light tokenizer must match transformers before it is trusted: code, prose, unicode
# (composed and decomposed, CJK, emoji), whitespace runs, tabs, CRLF and special tokens written as text.
PROBES = (
    "def average(xs):\n    return sum(xs) / len(xs)\n",
    "  \t\tmixed   whitespace \n\n\n\r\n  trailing   \n",
    "café, cafe\u0301, naïve, Ünïcödé, 日本語のテキスト, Ελληνικά, 🙂👍🏽, \u00a0nbsp\u2028sep",
    "<|im_start|>user\nhi<|im_end|>\n<|endoftext|> <tool_call>{\"a\": [1, 2]}</tool_call>",
    "    if x != y:  # comment with 'quotes' and \"doubles\" and `ticks`\n        raise ValueError(f\"{x!r}\")\n",
    "",
)
PROBE_CHATS = (
    [{"role": "system", "content": "You are a precise code editor."},
     {"role": "user", "content": "File: a.py\n\n```python\nx = 1\n```\n\nInstruction: rename x."}],
    [{"role": "user", "content": "Ünïcödé 🙂 and\n\n  spaces\t"}],
)


class LightTokenizer:
    """The subset of a transformers tokenizer editllm uses, on a `tokenizers.Tokenizer`.

    Calls mirror transformers' signatures (`tok(text, add_special_tokens=False)["input_ids"]`,
    `decode(ids, skip_special_tokens=..., clean_up_tokenization_spaces=...)`,
    `apply_chat_template(messages, tokenize=False, add_generation_prompt=True)`, ...) so that callers
    need not know which one they hold.
    """

    def __init__(self, backend: Any, meta: dict[str, Any]) -> None:
        """`backend`: a `tokenizers.Tokenizer`, or a `Reading` of one."""
        self._backend = backend
        self.meta = meta
        self.chat_template: str | None = meta["chat_template"]
        self.special_tokens_map: dict[str, Any] = meta["special_tokens_map"]
        self.all_special_ids: list[int] = meta["all_special_ids"]
        self.all_special_tokens: list[str] = meta["all_special_tokens"]
        self.vocab_size: int = meta["vocab_size"]  # transformers' vocab_size: without added tokens
        self._compiled = None
        self._plain: Any = None  # a second pipeline that reads special tokens' text as text (`split_special_tokens`)
        self._plain_lock = threading.Lock()

    @classmethod
    def load(cls, folder: str | Path) -> LightTokenizer | None:
        """The light tokenizer saved in `folder`; None when there is none, or it is not verified."""
        folder = Path(folder)
        try:
            meta = json.loads((folder / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not cls.judged(folder, meta) or not meta.get("verified"):
            return None
        return cls(Reading(folder / RUNTIME), meta)

    @staticmethod
    def judged(folder: str | Path, meta: dict | None = None) -> bool:
        """`save_light` has run on this folder for this format and its files are whole, whether it could
        mirror transformers or not (then transformers serves, and the check is not repeated each run)."""
        folder = Path(folder)
        try:
            meta = meta if meta is not None else json.loads((folder / META).read_text(encoding="utf-8"))
            size = (folder / RUNTIME).stat().st_size
        except (OSError, ValueError):
            return False
        return isinstance(meta, dict) and meta.get("format") == FORMAT and meta.get("runtime_bytes") in (None, size)

    @property
    def backend_tokenizer(self) -> Any:
        """The `tokenizers.Tokenizer` (the name transformers and llguidance use for it), waiting for
        its reading to finish if it is still under way."""
        if isinstance(self._backend, Reading):
            self._backend = self._backend.result()
        return self._backend

    # --- special tokens -------------------------------------------------------------------------------
    def _special(self, name: str) -> tuple[str | None, int | None]:
        return tuple(self.meta["special"].get(name, (None, None)))  # type: ignore[return-value]

    @property
    def eos_token(self) -> str | None:
        return self._special("eos_token")[0]

    @property
    def eos_token_id(self) -> int | None:
        return self._special("eos_token")[1]

    @property
    def bos_token_id(self) -> int | None:
        return self._special("bos_token")[1]

    @property
    def pad_token_id(self) -> int | None:
        return self._special("pad_token")[1]

    @property
    def unk_token_id(self) -> int | None:
        return self._special("unk_token")[1]

    # --- ids and text -----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.meta["len"]

    def __call__(self, text: str | list[str], add_special_tokens: bool = True,
                 return_offsets_mapping: bool = False, split_special_tokens: bool = False) -> dict[str, list]:
        """`{"input_ids": ..., "attention_mask": ...}` for one text or a list of texts, plus
        `offset_mapping` (each token's character span, as transformers' fast tokenizers give it) when asked.
        `split_special_tokens`: a special token's text (`<|im_end|>`) is read as ordinary text, as in
        transformers."""
        backend = self._plain_backend() if split_special_tokens else self.backend_tokenizer
        if isinstance(text, str):
            enc = backend.encode(text, add_special_tokens=add_special_tokens)
            out = {"input_ids": enc.ids, "attention_mask": [1] * len(enc.ids)}
            if return_offsets_mapping:
                out["offset_mapping"] = list(enc.offsets)
            return out
        encs = backend.encode_batch(text, add_special_tokens=add_special_tokens)
        out = {"input_ids": [e.ids for e in encs], "attention_mask": [[1] * len(e.ids) for e in encs]}
        if return_offsets_mapping:
            out["offset_mapping"] = [list(e.offsets) for e in encs]
        return out

    def _plain_backend(self) -> Any:
        """A copy of the pipeline with `encode_special_tokens` on, made at its first use (rare: a file that
        holds a special token's text); a copy, since switching the shared one would change what other
        threads encode meanwhile."""
        with self._plain_lock:
            if self._plain is None:
                from tokenizers import Tokenizer

                plain = Tokenizer.from_str(self.backend_tokenizer.to_str())
                plain.encode_special_tokens = True
                self._plain = plain
        return self._plain

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: int | list[int], skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool | None = None) -> str:
        """The text of `ids`. Clean-up of spaces before punctuation is transformers' WordPiece-era
        fix; transformers skips it for BPE models (it corrupts their output), and so does this."""
        text = self.backend_tokenizer.decode([ids] if isinstance(ids, int) else list(ids),
                                             skip_special_tokens=skip_special_tokens)
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.meta["clean_up_tokenization_spaces"]
        if clean_up_tokenization_spaces and self.meta["model_type"] != "BPE":
            for before, after in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"),
                                  (" n't", "n't"), (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
                text = text.replace(before, after)
        return text

    def convert_ids_to_tokens(self, ids: int | list[int]) -> str | list[str]:
        if isinstance(ids, int):
            return self.backend_tokenizer.id_to_token(ids)
        return [self.backend_tokenizer.id_to_token(i) for i in ids]

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> int | None | list[int | None]:
        """Unknown tokens give `unk_token_id` (None for Qwen), as in transformers."""
        if isinstance(tokens, str):
            found = self.backend_tokenizer.token_to_id(tokens)
            return self.unk_token_id if found is None else found
        return [self.convert_tokens_to_ids(t) for t in tokens]  # type: ignore[misc]

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    @property
    def vocab(self) -> dict[str, int]:
        return self.get_vocab()

    # --- chat template -------------------------------------------------------------------------------
    def apply_chat_template(self, conversation: list[dict[str, Any]], tools: list[dict] | None = None,
                            documents: list[dict] | None = None, add_generation_prompt: bool = False,
                            tokenize: bool = True, **kwargs: Any) -> str | list[int]:
        """The prompt text of one conversation, rendered as transformers renders it: the same jinja2
        sandbox, options and globals, the special tokens as variables (`kwargs` over them).
        `tokenize=True` returns the prompt's ids (special tokens not added again, as transformers)."""
        if self.chat_template is None:
            raise ValueError("this tokenizer has no chat template")
        if self._compiled is None:
            self._compiled = compile_template(self.chat_template)
        text = self._compiled.render(messages=[dict(m) for m in conversation], tools=tools, documents=documents,
                                     add_generation_prompt=add_generation_prompt,
                                     **{**self.special_tokens_map, **kwargs})
        return self.encode(text, add_special_tokens=False) if tokenize else text



class Reading:
    """A `tokenizers.Tokenizer` read from a file in a thread. tokenizers releases the GIL while it
    parses, so the reading overlaps llama.cpp's model load (which releases it too) and the imports."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, name="editllm-tokenizer", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            from tokenizers import Tokenizer

            self._result = Tokenizer.from_file(str(self.path))
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread by `result`
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


def compile_template(source: str):
    """A chat template compiled the way transformers compiles it (chat_template_utils): an immutable
    sandbox with trim_blocks and lstrip_blocks, loop controls, a `tojson` that keeps non-ASCII text,
    and the globals templates call (`raise_exception`, `strftime_now`). transformers' `{% generation %}`
    tag (assistant masks for training) is not supported: a template using it fails verification."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


# --- the one-time save, from a transformers tokenizer --------------------------------------------------------


def meta_of(hf: Any, verified: bool) -> dict[str, Any]:
    """What a LightTokenizer needs besides the pipeline, read off a loaded transformers tokenizer."""
    special = {}
    for name in ("bos_token", "eos_token", "unk_token", "pad_token"):
        token = getattr(hf, name, None)
        if token is not None:
            special[name] = [str(token), getattr(hf, f"{name}_id")]
    template = hf.chat_template if isinstance(hf.chat_template, str) else None
    return {
        "format": FORMAT,
        "verified": verified,
        "chat_template": template,
        "special_tokens_map": json.loads(json.dumps(hf.special_tokens_map, default=str)),
        "special": special,
        "all_special_ids": list(hf.all_special_ids),
        "all_special_tokens": [str(t) for t in hf.all_special_tokens],
        "vocab_size": int(hf.vocab_size),
        "len": len(hf),
        "clean_up_tokenization_spaces": bool(getattr(hf, "clean_up_tokenization_spaces", False)),
        "model_type": type(hf.backend_tokenizer.model).__name__,
    }


def differences(light: LightTokenizer, hf: Any) -> list[str]:
    """Where the light tokenizer disagrees with transformers on the probes (empty: none)."""
    found = []
    for text in PROBES:
        ids = hf(text, add_special_tokens=False)["input_ids"]
        if light(text, add_special_tokens=False)["input_ids"] != ids:
            found.append(f"ids of {text[:30]!r}")
        for skip in (False, True):
            want = hf.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False)
            if light.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False) != want:
                found.append(f"decode of {text[:30]!r} (skip_special_tokens={skip})")
    if light.chat_template is not None:
        for chat in PROBE_CHATS:
            for gen in (True, False):
                try:
                    same = light.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen) == \
                        hf.apply_chat_template(chat, tokenize=False, add_generation_prompt=gen)
                except Exception:  # noqa: BLE001 - a template our renderer cannot run: not verified
                    same = False
                if not same:
                    found.append(f"chat template (add_generation_prompt={gen})")
    if len(light) != len(hf) or light.all_special_ids != list(hf.all_special_ids):
        found.append("sizes or special ids")
    return found


def save_light(hf: Any, folder: str | Path) -> bool:
    """Save a light copy of the transformers tokenizer `hf` into `folder`; True when it matches `hf` on
    the probes. An unverified one is saved too, marked so, so that it is not probed on every load."""
    from tokenizers import Tokenizer

    folder = Path(folder)
    backend = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    backend.no_padding()
    backend.no_truncation()
    verified = not differences(LightTokenizer(backend, meta_of(hf, True)), hf)
    runtime = backend.to_str().encode("utf-8")
    publish_file(folder / RUNTIME, runtime)
    meta = meta_of(hf, verified) | {"runtime_bytes": len(runtime)}  # a runtime file cut short is not read
    publish_file(folder / META, json.dumps(meta, ensure_ascii=False, indent=1).encode("utf-8"))  # last: complete
    return verified
