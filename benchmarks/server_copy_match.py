"""Does the server's copy loop write local copy mode's program? (issue 23's first target, on real cases)

The client-driven copy loop (`remote.modes.run_copy_loop`) asks a llama-server for one op at a time under a
per-request grammar, appending the copied lines' token ids between requests; local copy mode
(`editor.copymode`) runs the same program under the same matcher on the in-process llama.cpp engine,
re-reading its copies. Both are greedy on the same GGUF, so they should write the same program; a batched
forward on llama.cpp may flip a near-tie, so a mismatch is shown with where the two programs part and the
local engine's logits of both choices there (local program teacher-forced as copy mode feeds it, copies
included: `copy_probe.teacher_forced`); a gap under 0.1 is a near-tie.

For each case: local copy mode (the model loaded in this process) and the copy loop through a llama-server
started here on the same GGUF (`editor.llamaserver`, one slot, 2 threads); with `--rewrite`, rewrite through
the same two as well (a mismatch there says the two engines' logits differ for reasons of their own).
Records go to OUT/records.jsonl as they come, a summary to OUT/summary.json.

    python benchmarks/server_copy_match.py --kind heldout-bugfix --out DIR [--limit N] [--max-lines N] [--rewrite]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from editllm.bench.cases import default_cases, load_cases
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LlamaServer
from editllm.editor.models import gguf_of, load_model
from editllm.editor.source import SourceFile
from editllm.remote.modes import edit_remote
from editllm.remote.session import connect


def parting(a: str | None, b: str | None) -> int | None:
    """Index of the first character where two programs differ (None when equal)."""
    if a == b:
        return None
    a, b = a or "", b or ""
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def gap_at_parting(lm, case, local: str, server: str, at: int) -> dict:
    """The local engine's logits, at the program token where `local` and `server` part (character `at`), of
    the token each wrote there: one forward over the prompt and the local program up to that point."""
    import numpy as np
    from editllm.bench.copy_probe import teacher_forced
    from editllm.editor.copymode import copy_prompt_ids
    from editllm.editor.edit import copy_shown
    from editllm.grammar.program import Copy, parse

    tok = lm.tokenizer
    src = SourceFile(case.path, case.before)
    _, shown, lines = copy_shown(src, case.instruction, EditOptions())
    prompt = copy_prompt_ids(lm, src.path, shown, case.instruction)
    fed, text = [], ""
    for item in teacher_forced(tok, parse(local), lines, min(lm.engine.eos)):
        if isinstance(item[0], Copy):
            fed += item[1]
            continue
        piece = tok.decode([item[0]])
        if len(text) + len(piece) > at:  # the token where the programs part: the server wrote another here
            mine = item[0]
            break
        text += piece
        fed.append(item[0])
    else:
        return {}
    theirs = tok(server[len(text):at + 1], add_special_tokens=False)["input_ids"][0]
    lm.engine.reset()
    row = np.asarray(lm.engine.forward(prompt + fed, keep=1)[-1], dtype=np.float64)
    lm.engine.reset()
    return {"local_token": tok.decode([mine]), "server_token": tok.decode([theirs]),
            "logit_gap": round(float(row[mine] - row[theirs]), 4)}


def run_one(lm, remote, case, mode: str) -> dict:
    """One case in `mode` locally and through the server: texts, programs, fallbacks, seconds, errors."""
    src = SourceFile(case.path, case.before)
    out: dict = {"id": case.id, "mode": mode, "lines": case.lines}
    for side, run in (("local", lambda: edit_file(lm, src, case.instruction, EditOptions(mode=mode))),
                      ("server", lambda: edit_remote(remote, src, case.instruction, EditOptions(mode=mode)))):
        try:
            r = run()
            out[side] = {"text": r.new_text, "program": getattr(r.stats, "program", None), "fallback": r.fallback,
                         "output_tokens": r.stats.output_tokens, "error": None}
        except EditError as exc:
            out[side] = {"text": None, "program": None, "fallback": None, "error": str(exc)}
    loc, srv = out["local"], out["server"]
    out["same_text"] = loc["text"] is not None and loc["text"] == srv["text"]
    if mode == "copy":
        out["same_program"] = loc["program"] == srv["program"] and loc["fallback"] == srv["fallback"]
        at = parting(loc["program"], srv["program"])
        if at is not None:
            out["parting"] = {"at": at, "local": (loc["program"] or "")[max(0, at - 60): at + 40],
                              "server": (srv["program"] or "")[max(0, at - 60): at + 40]}
            if loc["program"] and srv["program"]:
                out["parting"] |= gap_at_parting(lm, case, loc["program"], srv["program"], at)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--kind", action="append")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--min-lines", type=int)
    ap.add_argument("--max-lines", type=int)
    ap.add_argument("--rewrite", action="store_true", help="also compare rewrite mode's text")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cases = load_cases(default_cases(), args.kind, args.limit, args.min_lines, args.max_lines)
    args.out.mkdir(parents=True, exist_ok=True)
    lm = load_model(args.model, engine="llamacpp")
    records = []
    with LlamaServer(gguf_of(args.model), ["-c", "8192", "-np", "1", "--no-warmup"], threads=2) as server:
        remote = connect(server.url, args.model)
        with open(args.out / "records.jsonl", "w") as log:
            for case in cases:
                for mode in ("copy", "rewrite") if args.rewrite else ("copy",):
                    rec = run_one(lm, remote, case, mode)
                    records.append(rec)
                    log.write(json.dumps(rec) + "\n")
                    log.flush()
                    print(case.id, mode, rec.get("same_program"), rec["same_text"], rec["local"]["fallback"],
                          rec["local"]["error"], rec["server"]["error"], file=sys.stderr, flush=True)
    copies = [r for r in records if r["mode"] == "copy"]
    rewrites = [r for r in records if r["mode"] == "rewrite"]
    summary = {"model": args.model, "cases": len(copies),
               "copy_same_program": sum(r["same_program"] for r in copies),
               "copy_programs_written": sum(r["local"]["fallback"] is None and r["local"]["error"] is None
                                            for r in copies),
               "copy_server_fallbacks": sum(r["server"]["fallback"] is not None for r in copies),
               "rewrite_same_text": sum(r["same_text"] for r in rewrites) if rewrites else None}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
