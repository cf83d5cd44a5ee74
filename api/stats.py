"""The `--stats` record: totals over a run's files first, then one entry per file."""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Sequence


def stats_record(lm, mode: str, edits: Sequence, started: float) -> dict:
    """Aggregate `FileEdit`s' stats into one JSON-ready object; `started` is the run's
    `time.perf_counter()` at start. `changed`/`files_unchanged` make a no-op visible."""
    files = [e.as_dict() for e in edits]
    total = {k: sum(f[k] for f in files) for k in
             ("prompt_tokens", "output_tokens", "forwards", "copy_attempts", "copied_tokens")}
    decode = sum(e.stats.decode_seconds + e.stats.prefill_seconds for e in edits)
    steps = total["forwards"] - len(files)
    return {
        "mode": mode,
        "model": lm.name,
        "device": lm.device,
        "dtype": str(lm.dtype).removeprefix("torch."),
        "engine": lm.engine_name,
        "adapter": lm.adapter,  # loaded unmerged: it runs only for copy mode's program
        # llama.cpp's kernels whose logits do not depend on the batch (editor.invariant); False elsewhere
        "batch_invariant": lm.engine_name == "llamacpp" and bool(getattr(lm.engine, "batch_invariant", False)),
        # the static engine: CUDA graphs captured (True), padded shapes emulated, or eager (False); and why
        # capture failed when it did (forwards then run eagerly)
        **({"graphs": lm.engine.graphs, "graph_error": lm.engine.graph_error} if lm.engine_name == "static" else {}),
        "changed": any(f["changed"] for f in files),
        "files_changed": sum(1 for f in files if f["changed"]),
        "files_unchanged": sum(1 for f in files if not f["changed"]),
        **total,
        "tokens_per_forward": round(total["output_tokens"] / steps, 3) if steps > 0 else None,
        "copied_share": round(total["copied_tokens"] / total["output_tokens"], 3) if total["output_tokens"] else 0.0,
        "load_seconds": round(lm.load_seconds, 3),
        # process start to model ready, interpreter and imports included (None where unknown)
        "ready_seconds": None if getattr(lm, "ready_seconds", None) is None else round(lm.ready_seconds, 3),
        "peak_rss_mb": peak_rss_mb(),
        "decode_seconds": round(decode, 3),
        "total_seconds": round(time.perf_counter() - started, 3),
        "files": files,
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (getrusage's maxrss: KB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)
