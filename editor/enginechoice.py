"""Which CPU engine `--engine auto` takes for a GGUF model on this machine: measured once, by `model prepare`.

Why: the two CPU engines trade places by CPU. llama.cpp's Q4_K kernels (an AVX2 build, `make install`) decode a
token in ~70-90 ms on 2 cores, the torch engine's bf16 weights in ~260-290 ms; but a batched forward, which is
what spec and copy mode spend most of an edit on (a draft checked at once, the prompt read), runs on AMX tiles in
torch and on AVX2 in llama.cpp: on session 44's Xeon (AMX) a 128-token forward took 1.0 s against 3.4 s, and the
held-out bench's 8 bug fixes in spec 21.1 s against 111 s (the same tests passed). On AVX2 alone the torch engine
runs in float32 (~2 tokens/s against llama.cpp's 15.6) and loses everywhere. So the choice is measured, not guessed
from CPU flags: `editllm model prepare` times both engines' forwards (`costs.engine_costs`, the tables their
drafters use), prices a reference edit with each (`estimate`) and records the faster here; `auto` reads the record
and takes the torch engine only where it was measured faster and its conversion is ready. No record (nothing
prepared, another CPU, another model file): llama.cpp, as before. A run never measures or converts on its own to
choose.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from editllm.editor.cachefs import publish_file
from editllm.editor.costs import Costs, cpu_kind, cpu_name
from editllm.editor.modelspec import cache_dir
from editllm.editor.prefix import file_identity

FORMAT = 1
# The reference edit each engine is priced on: a prompt and an output of 1,000 tokens each, 95 % of the output
# copied in drafts of 64 tokens checked in one forward, the rest decoded a token a forward. The held-out bench's
# spec runs (session 44) copied 98 % at 53-54 tokens a forward; an edit that writes much new text (docstrings
# everywhere) copies less, and there llama.cpp's cheaper step counts for more.
PROMPT_TOKENS = 1000
OUTPUT_TOKENS = 1000
COPIED_SHARE = 0.95
DRAFT = 64
PROMPT_CHUNK = 512  # tokens a prompt forward takes at once (llama.cpp's n_batch)


def estimate(costs: Costs) -> float:
    """Seconds of the reference edit on an engine with these measured forward costs."""
    chunks = math.ceil(PROMPT_TOKENS / PROMPT_CHUNK)
    prompt = chunks * costs.of(math.ceil(PROMPT_TOKENS / chunks))
    copied = OUTPUT_TOKENS * COPIED_SHARE
    return prompt + math.ceil(copied / DRAFT) * costs.of(DRAFT) + (OUTPUT_TOKENS - copied) * costs.of(1)


def machine_key(gguf: Path) -> dict:
    """What a recorded choice depends on: this CPU (its name, family/model/stepping and flags, cores) and the model
    file (path, size, mtime)."""
    return {"format": FORMAT, "cpu": cpu_name(), "cpu_kind": cpu_kind(), "cores": os.cpu_count(),
            "model": file_identity(gguf)}


def choice_path(gguf: Path) -> Path:
    return cache_dir() / "engine-choice" / f"{Path(gguf).name}.json"


def record(gguf: Path, llamacpp: Costs, torch: Costs) -> dict:
    """Price the reference edit on both engines, save the faster as this machine's choice for `gguf`, and return
    what was saved (`model info` and `model prepare` show it)."""
    seconds = {"llamacpp": round(estimate(llamacpp), 2), "torch": round(estimate(torch), 2)}
    saved = {"key": machine_key(gguf), "engine": min(seconds, key=seconds.get), "reference_edit_seconds": seconds,
             "reference_edit": {"prompt_tokens": PROMPT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                                "copied_share": COPIED_SHARE, "draft": DRAFT}}
    path = choice_path(gguf)
    path.parent.mkdir(parents=True, exist_ok=True)
    publish_file(path, json.dumps(saved, indent=1).encode())
    return saved


def recorded(gguf: Path | None) -> dict | None:
    """The choice `record` saved for this machine and model file; None when there is none, or it was made on
    another CPU or for another file."""
    if gguf is None:
        return None
    try:
        saved = json.loads(choice_path(gguf).read_text())
        if saved.get("key") != json.loads(json.dumps(machine_key(gguf))) or saved.get("engine") not in (
                "llamacpp", "torch"):
            return None
        return saved
    except (OSError, ValueError, AttributeError):
        return None
