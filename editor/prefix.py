"""The fixed part of a prompt read once: a saved cache state of it, on disk, never trusted blindly.

Why: every rewrite/spec prompt starts with the same ~70 tokens (chat template, system message, the
wording that asks for the whole file; editor.prompt puts them first). A batched CPU forward costs
~25 ms a token whatever it reads, so reading them on every call is pure waste. An engine that can
export one sequence's cache (llama.cpp: `llama_state_seq_get_data`) saves it once to the cache dir
and loads it at the start of each run; within one process it simply keeps the prefix's cells.

A state is only valid for the exact weights, adapter, engine build, context size and prefix token
ids that made it, so all of them go into the key *and* into the file's header, which is compared in
full on load (a hash collision or a renamed file cannot smuggle in another state). The payload is
checksummed: a truncated or corrupt file is ignored and rebuilt, never loaded. The prefix's token ids
are the prompt version that matters here: any change of the fixed wording changes them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from editllm.editor.cachefs import publish_file
from editllm.editor.modelspec import cache_dir

MAGIC = b"editllm-prefix-state\n"
FORMAT = 1  # bump when the file layout changes


def file_identity(path: str | Path) -> dict:
    """Which weights: resolved path, size and mtime (hashing a 1 GB GGUF on every load would cost
    more than the prefix it saves; a rewritten file changes its size or mtime)."""
    p = Path(path).resolve()
    st = p.stat()
    return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def state_header(identity: dict, prefix_ids: list[int] | tuple[int, ...]) -> dict:
    """Everything a saved state depends on: the engine's identity and the prefix's token ids."""
    return {"format": FORMAT, "identity": identity, "prefix_ids": list(prefix_ids)}


def state_path(header: dict) -> Path:
    """Where the state for `header` lives: one file per key under the cache dir."""
    key = hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / "prefix-state" / f"{key}.bin"


def save_state(path: Path, header: dict, data: bytes) -> None:
    """Write header, payload checksum and payload as one whole file (`publish_file`): a reader never sees
    half of it and two processes saving at once leave one whole file."""
    head = json.dumps(header, sort_keys=True).encode()
    meta = json.dumps({"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}).encode()
    publish_file(path, MAGIC + head + b"\n" + meta + b"\n" + data)


def load_state(path: Path, header: dict) -> bytes | None:
    """The payload saved for exactly `header`, or None when the file is missing, for another header,
    truncated or corrupt (the caller then reads the prefix and saves it again)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if not raw.startswith(MAGIC):
        return None
    try:
        head, meta, data = raw[len(MAGIC):].split(b"\n", 2)
        if json.loads(head) != json.loads(json.dumps(header, sort_keys=True)):
            return None
        meta = json.loads(meta)
    except ValueError:
        return None
    if len(data) != meta.get("bytes") or hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return None
    return data


def prefix_token_count(tokenizer, prefix: str, ids: list[int]) -> int:
    """How many of a prompt's `ids` are its fixed `prefix` text's tokens; 0 when there is no prefix or its
    own ids are not a prefix of them (a tokenizer that merges across the boundary), so a saved state is
    only ever used for exactly the tokens it holds. Rewrite/spec (editor.edit) and copy mode use it."""
    if not prefix:
        return 0
    head = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    return len(head) if list(ids[: len(head)]) == list(head) else 0

