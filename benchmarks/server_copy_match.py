"""Does the server's copy loop write local copy mode's program? (issue 23's first target, on real cases)

The client-driven copy loop (`remote.modes.run_copy_loop`) asks a llama-server for one op at a time under a
per-request grammar, appending the copied lines' token ids between requests; local copy mode
(`editor.copymode`) runs the same program under the same matcher on the in-process llama.cpp engine,
re-reading its copies. Both are greedy on the same GGUF, so they should write the same program; a batched
forward on llama.cpp may flip a near-tie (its kernels round differently for a batch of 1 and of many, and the
two decoders batch the same tokens differently: local copy mode verifies drafts and feeds forced tokens with
the token before them, the server writes one token a step), so a mismatch is shown with where the two
programs part (their first differing token: the same text may be written in other tokens, and from there
the two contexts differ) and the logits of both choices there, three ways: as each decoder saw them when it
chose (its own cache entries, the last token read again: `local_own_gap`, `server_own_gap`, each positive
for the token it wrote), and in one batched forward on the local engine (`logit_gap`, the program up to there
fed as copy mode feeds it, copies included). A gap under 0.1 is a near-tie.

For each case: local copy mode (the model loaded in this process) and the copy loop through a llama-server
started here on the same GGUF (`editor.llamaserver`, one slot, 2 threads); with `--rewrite`, rewrite through
the same two as well (a mismatch there says the two engines' logits differ for reasons of their own).
Records go to OUT/records.jsonl as they come, a summary to OUT/summary.json.

    python benchmarks/server_copy_match.py --kind heldout-bugfix --out DIR [--limit N] [--max-lines N] [--rewrite]
    python benchmarks/server_copy_match.py --engine vllm --rewrite --spec ...   # EDITLLM_VLLM: a venv with vLLM

With `--engine vllm` the server is `vllm serve` on the HF folder `editllm model prepare` writes and the local side
the torch engine on that folder (vLLM runs no GGUF of ours); `--spec` then runs spec through a second server
started with speculation and compares its text with the first server's rewrite (lossless on the server).
`--engine sglang` is the same with an SGLang server (`EDITLLM_SGLANG`: a venv from remote/install-sglang-cpu.sh);
its n-gram speculation runs on CUDA only, so `--spec` is refused there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from editllm.bench.cases import default_cases, load_cases
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LlamaServer
from editllm.editor.models import gguf_of, load_model
from editllm.editor.source import SourceFile
from editllm.remote.modes import edit_remote
from editllm.remote.session import connect


def parting(a: list[int], b: list[int]) -> int | None:
    """Index of the first token where two programs differ (None when equal): two programs of the same text may
    differ in tokens, and from there their contexts differ."""
    if a == b:
        return None
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def fed_upto(lm, ids: list[int], lines: list[str], k: int) -> list[int]:
    """What copy mode feeds after the prompt for the first `k` program tokens: each token, and after one that
    closes a copy tag the copied lines' ids (the replay of local copy mode's matcher and resolver)."""
    from editllm.grammar.matcher import ProgramMatcher
    from editllm.resolver.resolve import Resolver

    matcher = ProgramMatcher(lm.tokenizer, len(lines), lm.engine.vocab_size, sorted(lm.engine.eos))
    resolver = Resolver(lm.tokenizer, "".join(lines), lines)
    fed: list[int] = []
    for t in ids[:k]:
        matcher.advance(t)
        fed.append(t)
        if matcher.closed is not None:
            fed += resolver.tokens(matcher.closed)
    return fed


def case_prompt(lm, case) -> tuple[list[int], list[str]]:
    """Copy mode's prompt ids for a case (focused as the product runs it) and the lines it numbers."""
    from editllm.editor.copymode import copy_prompt_ids
    from editllm.editor.edit import copy_shown

    src = SourceFile(case.path, case.before)
    _, shown, lines = copy_shown(src, case.instruction, EditOptions())
    return copy_prompt_ids(lm, src.path, shown, case.instruction), lines


def best(scores, ids: list[int]) -> float | None:
    """The highest score among `ids` (a program's end is whichever end-of-generation id scores highest: every
    one is legal there), None when none is scored."""
    found = [float(scores[i]) for i in ids if i in scores] if isinstance(scores, dict) else \
        [float(scores[i]) for i in ids]
    return max(found) if found else None


def gap(scores, mine: list[int], theirs: list[int]) -> float | None:
    a, b = best(scores, mine), best(scores, theirs)
    return None if a is None or b is None else round(a - b, 4)


def local_own_gap(lm, p: dict) -> float | dict:
    """logit(local's token) − logit(server's token) as the local decode saw it: the engine still holds the
    prompt and the program as copy mode fed them, so it drops the entries from the token before the parting on
    and reads that one token again (its own entries before it untouched). Call right after the local copy run;
    where the cache is shorter than that point, what it holds instead."""
    engine, seq = lm.engine, p["prompt"] + p["fed"]
    if getattr(engine, "length", 0) < len(seq):
        return {"cache": getattr(engine, "length", None), "needed": len(seq)}
    engine.truncate(engine.length - len(seq) + 1)
    return gap(engine.forward(seq[-1:], keep=1)[-1], p["mine"], p["theirs"])


def server_own_gap(remote, p: dict) -> float | None:
    """logprob(server's token) − logprob(local's) (= the logit difference) as the server's copy loop saw it,
    from a one-token request on the prompt and the program up to the parting, the run's entries still cached.
    llama-server: the slot's cache holds that run's sequence, so only the last token is read again; `n_probs`
    with `post_sampling_probs` off gives log-softmax of the raw logits (before the grammar). vLLM: its prefix
    cache is kept in blocks, so up to one block (`--block-size`) is read again; `logprobs` are of the raw
    logits too. SGLang: its radix cache holds all but the last token; `top_logprobs_num` of the request's one
    token (no grammar). None when either token is not in its top 20."""
    seq = p["prompt"] + p["fed"]
    if remote.info.kind == "sglang":
        from editllm.remote.sglang import GREEDY

        answer = remote.client.request("/generate", {
            "input_ids": seq, "sampling_params": {**GREEDY, "max_new_tokens": 1}, "return_logprob": True,
            "top_logprobs_num": 20, "logprob_start_len": len(seq) - 1})
        top = {int(i): lp for lp, i, _ in answer["meta_info"]["output_top_logprobs"][0]}
    elif remote.info.kind == "vllm":
        from editllm.remote.vllm import GREEDY

        answer = remote.client.request("/v1/completions", {
            "model": remote.info.model, "prompt": seq, "max_tokens": 1, **GREEDY, "logprobs": 20,
            "return_tokens_as_token_ids": True})
        rows = answer["choices"][0]["logprobs"]["top_logprobs"][0]
        top = {int(k.split(":", 1)[1]): v for k, v in rows.items()}
    else:
        answer = remote.client.request("/completion", {
            "prompt": seq, "n_predict": 1, "n_probs": 20, "post_sampling_probs": False,
            "temperature": 0, "cache_prompt": True, "id_slot": 0, "stream": False})
        top = {q["id"]: q["logprob"] for q in answer["completion_probabilities"][0]["top_logprobs"]}
    return gap(top, p["theirs"], p["mine"])


def parting_tokens(lm, case, local: list[int], server: list[int], k: int) -> dict:
    """Where the programs part (token `k`): the prompt, what was fed before that point, and the token each side
    wrote there, as id lists (a program's end: every end-of-generation id)."""
    ends = sorted(lm.engine.eos)
    prompt, lines = case_prompt(lm, case)
    return {"prompt": prompt, "fed": fed_upto(lm, local, lines, k),
            "mine": [local[k]] if k < len(local) else ends, "theirs": [server[k]] if k < len(server) else ends}


def name(tok, ids: list[int]) -> str:
    return tok.decode(ids) if len(ids) == 1 else "(end)"


def batched_gap(lm, p: dict) -> float | None:
    """logit(local's token) − logit(server's token) in one forward over the prompt and the program up to the
    parting: a third way to batch the same tokens (the own-path gaps are those the decoders decided by)."""
    lm.engine.reset()
    row = lm.engine.forward(p["prompt"] + p["fed"], keep=1)[-1]  # numpy (llama.cpp) or a torch tensor
    value = gap(row, p["mine"], p["theirs"])
    lm.engine.reset()
    return value


def outcome(run, case) -> dict:
    """One edit's text, program, fallback, requests, seconds and error, and whether it is the case's `after`."""
    started = time.perf_counter()
    try:
        r = run()
        out = {"text": r.new_text, "program": getattr(r.stats, "program", None),
               "program_ids": getattr(r.stats, "program_ids", None) or None, "fallback": r.fallback,
               "output_tokens": r.stats.output_tokens, "requests": getattr(r.stats, "requests", None), "error": None}
    except EditError as exc:
        out = {"text": None, "program": None, "program_ids": None, "fallback": None, "error": str(exc)}
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out | judged(out, case)


def judged(out: dict, case) -> dict:
    """Whether an edit's text is the case's `after` and passes its tests (None: no text, or no tests). The
    tests run on the file whatever wrote it (a program, or spec after a fallback)."""
    from editllm.bench.sandbox import run_tests

    text = out["text"]
    return {"exact": case.after is not None and text == case.after,
            "tests": run_tests(text, case.tests) if text is not None else None}


def run_one(lm, remote, case, mode: str, one_request: bool = False) -> dict:
    """One case in `mode` locally and through the server: texts, programs, fallbacks, seconds, errors. With
    `one_request` (copy mode), then the whole program in one request too (`copy_requests="one"`), after the
    loop's parting is probed (that request replaces the slot's cached sequence)."""
    src = SourceFile(case.path, case.before)
    out: dict = {"id": case.id, "mode": mode, "lines": case.lines}
    out["local"] = outcome(lambda: edit_file(lm, src, case.instruction, EditOptions(mode=mode)), case)
    out["server"] = outcome(lambda: edit_remote(remote, src, case.instruction, EditOptions(mode=mode)), case)
    loc, srv = out["local"], out["server"]
    out["same_text"] = loc["text"] is not None and loc["text"] == srv["text"]
    if mode == "copy":
        out["same_program"] = loc["program"] == srv["program"] and loc["fallback"] == srv["fallback"]
        out["same_tokens"] = loc["program_ids"] == srv["program_ids"] and loc["fallback"] == srv["fallback"]
        k = parting(loc["program_ids"], srv["program_ids"]) if loc["program_ids"] and srv["program_ids"] else None
        if k is not None:
            tok = lm.tokenizer
            at = len(tok.decode(loc["program_ids"][:k]))
            out["parting"] = {"token": k, "at": at,
                              "local": tok.decode(loc["program_ids"][max(0, k - 20):k + 12]),
                              "server": tok.decode(srv["program_ids"][max(0, k - 20):k + 12])}
            p = parting_tokens(lm, case, loc["program_ids"], srv["program_ids"], k)
            written = loc["fallback"] is None and srv["fallback"] is None  # both caches hold their program
            out["parting"] |= {
                "local_token": name(tok, p["mine"]), "server_token": name(tok, p["theirs"]),
                # the gap each decoder decided by, from its own cache entries (positive: it chose its token)
                "local_own_gap": local_own_gap(lm, p) if written else None,
                "server_own_gap": server_own_gap(remote, p) if written else None,
                "logit_gap": batched_gap(lm, p)}
        if one_request:
            one = outcome(lambda: edit_remote(remote, src, case.instruction,
                                              EditOptions(mode="copy", copy_requests="one")), case)
            out["one"] = one
            out["one_same_program_as_loop"] = one["program"] == srv["program"] and one["fallback"] == srv["fallback"]
    return out


LLAMA_SPEC = ["--spec-type", "ngram-simple"]
VLLM_ARGS = ["--max-model-len", "8192", "--block-size", "32", "--enforce-eager",
             "--structured-outputs-config", '{"backend":"guidance"}']
SGLANG_ARGS = ["--context-length", "8192", "--max-total-tokens", "16384"]
VLLM_SPEC = ["--speculative-config", '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}',
             "--per-request-spec-decode-metrics", "summary"]


def no_repack() -> None:
    """`--no-repack`: llama.cpp's CPU weight repacking off in this process (llama-cpp-python's model
    defaults) and on the server (`--no-repack`). Repacked Q4_K weights are multiplied by one kernel for a
    single row and another for rows in fours, which round differently: a probe of how much of a mismatch
    that is (the product keeps repacking: decode steps are faster with it)."""
    from editllm.editor.llamacpp import load_llama_cpp

    llama_cpp = load_llama_cpp()
    defaults = llama_cpp.llama_model_default_params

    def params():
        p = defaults()
        p.use_extra_bufts = False
        return p

    llama_cpp.llama_model_default_params = params


def started(engine: str, model: str, speculative: bool = False, repack: bool = True, invariant: bool = False,
            dtype: str = "auto"):
    """A server of that kind on the model, as a context manager: llama-server on its GGUF (one slot, 2
    threads; `invariant`: batch-invariant kernels, as the local engine's), or vLLM on the HF folder the local
    torch engine loads (bf16 where the CPU has bf16 units, as the torch engine picks; 2 OpenMP threads)."""
    if engine == "sglang":
        from editllm.editor.models import resolve_model
        from editllm.remote.sglangserver import SglangServer

        return SglangServer(resolve_model(model), [*SGLANG_ARGS, *([] if dtype == "auto" else ["--dtype", dtype])],
                            threads=2)
    if engine == "vllm":
        from editllm.editor.models import resolve_model
        from editllm.remote.vllmserver import VllmServer

        return VllmServer(resolve_model(model), [*VLLM_ARGS, *(VLLM_SPEC if speculative else []),
                                                 *([] if dtype == "auto" else ["--dtype", dtype])], threads=2)
    return LlamaServer(gguf_of(model), ["-c", "8192", "-np", "1", "--no-warmup", *([] if repack else ["--no-repack"]),
                                        *(LLAMA_SPEC if speculative else [])], threads=2,
                       batch_invariant=invariant)


def run_spec(remote, case, rewritten: str | None) -> dict:
    """spec through a speculating server against that server kind's rewrite text (lossless: the same)."""
    src = SourceFile(case.path, case.before)
    out: dict = {"id": case.id, "mode": "spec", "lines": case.lines}
    try:
        r = edit_remote(remote, src, case.instruction, EditOptions(mode="spec"))
        out["spec"] = {"text": r.new_text, "speculative": r.stats.speculative, "drafted": r.stats.copy_attempts,
                       "accepted": r.stats.copied_tokens, "output_tokens": r.stats.output_tokens, "error": None}
    except EditError as exc:
        out["spec"] = {"text": None, "speculative": None, "drafted": 0, "accepted": 0, "error": str(exc)}
    out["same_text"] = rewritten is not None and out["spec"]["text"] == rewritten
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--kind", action="append")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--ids", help="only these case ids (comma-separated)")
    ap.add_argument("--min-lines", type=int)
    ap.add_argument("--max-lines", type=int)
    ap.add_argument("--rewrite", action="store_true", help="also compare rewrite mode's text")
    ap.add_argument("--no-copy", action="store_true", help="with --rewrite: rewrite (and --spec) only")
    ap.add_argument("--one-request", action="store_true", help="copy mode: also the whole program in one "
                    "request (copy_requests='one'), its quality beside the loop's")
    ap.add_argument("--engine", choices=("llama-server", "vllm", "sglang"), default="llama-server",
                    help="llama-server on the GGUF against the local llama.cpp engine, or vLLM or SGLang (on the CPU: "
                         "EDITLLM_SGLANG) on the HF folder `editllm model prepare` writes against the local torch "
                         "engine on that folder")
    ap.add_argument("--spec", action="store_true", help="with --rewrite: then spec through a second server "
                    "started with n-gram speculation, its text compared with that server kind's rewrite")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--no-repack", action="store_true", help="llama.cpp's weight repacking off on both sides "
                    "(a probe of batch-dependent rounding)")
    ap.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                    help="--engine vllm or sglang: the dtype of both sides (auto: bf16 where the CPU has bf16 units)")
    ap.add_argument("--batch-invariant", action="store_true", help="llama.cpp's batch-invariant kernels on both "
                    "sides (editor.invariant): a token's logits do not depend on how it was batched")
    ap.add_argument("--summarize", action="store_true", help="judge OUT/records.jsonl again and write the summary")
    args = ap.parse_args()
    if args.summarize:
        rejudge(args)
        return
    cases = load_cases(default_cases(), args.kind, args.limit, args.min_lines, args.max_lines)
    if args.ids:
        cases = [c for c in cases if c.id in args.ids.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.no_repack:
        no_repack()
    if args.batch_invariant and args.engine != "llama-server":
        ap.error("--batch-invariant is llama.cpp's (local engine and llama-server)")
    if args.dtype != "auto" and args.engine == "llama-server":
        ap.error("--dtype is for --engine vllm or sglang (the GGUF's weights are what they are)")
    if args.no_copy and not args.rewrite:
        ap.error("--no-copy needs --rewrite (nothing else to run)")
    if args.spec and args.engine == "sglang":
        ap.error("--spec: SGLang's n-gram speculation (--speculative-algorithm NGRAM) runs on CUDA only")
    lm = load_model(args.model, engine="llamacpp" if args.engine == "llama-server" else "torch", dtype=args.dtype,
                    batch_invariant=args.batch_invariant)
    records: list[dict] = []
    with started(args.engine, args.model, repack=not args.no_repack, invariant=args.batch_invariant,
                 dtype=args.dtype) as server, \
            open(args.out / "records.jsonl", "w") as log:
        remote = connect(server.url, args.model, kind=args.engine)
        for case in cases:
            for mode in ("rewrite",) if args.no_copy else ("copy", "rewrite") if args.rewrite else ("copy",):
                rec = run_one(lm, remote, case, mode, args.one_request)
                records.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(case.id, mode, rec.get("same_program"), rec["same_text"], rec["local"]["fallback"],
                      rec["local"]["error"], rec["server"]["error"], file=sys.stderr, flush=True)
    if args.spec and args.rewrite:
        rewritten = {r["id"]: r["server"]["text"] for r in records if r["mode"] == "rewrite"}
        with started(args.engine, args.model, speculative=True, repack=not args.no_repack,
                     invariant=args.batch_invariant, dtype=args.dtype) as server, \
                open(args.out / "records.jsonl", "a") as log:
            remote = connect(server.url, args.model, kind=args.engine)
            for case in cases:
                rec = run_spec(remote, case, rewritten[case.id])
                records.append(rec)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(case.id, "spec", rec["same_text"], rec["spec"]["speculative"], rec["spec"]["drafted"],
                      file=sys.stderr, flush=True)
    summarize(records, args)


def summarize(records: list[dict], args) -> dict:
    """The run's counts (OUT/summary.json)."""
    copies = [r for r in records if r["mode"] == "copy"]
    rewrites = [r for r in records if r["mode"] == "rewrite"]
    specs = [r for r in records if r["mode"] == "spec"]
    sides = ("local", "server", "one")
    invariant = bool(getattr(args, "batch_invariant", False))  # its kernels repack nothing either
    summary = {"model": args.model, "engine": args.engine, "repack": not (args.no_repack or invariant),
               "batch_invariant": invariant,
               "dtype": getattr(args, "dtype", "auto"), "cases": len({r["id"] for r in records}),
               "copy_same_program": sum(r["same_program"] for r in copies),
               "copy_same_tokens": sum(bool(r.get("same_tokens")) for r in copies),
               "copy_programs_written": sum(r["local"]["fallback"] is None and r["local"]["error"] is None
                                            for r in copies),
               "copy_server_fallbacks": sum(r["server"]["fallback"] is not None for r in copies),
               "rewrite_same_text": sum(r["same_text"] for r in rewrites) if rewrites else None,
               "copy_exact": {side: sum(bool((r.get(side) or {}).get("exact")) for r in copies) for side in sides},
               "copy_tests_passed": {side: sum(bool((r.get(side) or {}).get("tests")) for r in copies)
                                     for side in sides},
               "copy_tests_passed_by_a_program": {
                   side: sum(bool((r.get(side) or {}).get("tests")) and (r.get(side) or {}).get("fallback") is None
                             for r in copies) for side in sides},
               "copy_fallbacks": {side: sum((r.get(side) or {}).get("fallback") is not None for r in copies)
                                  for side in sides},
               "one_request_same_program_as_loop": sum(bool(r.get("one_same_program_as_loop")) for r in copies)
               if any("one" in r for r in copies) else None,
               "spec_same_as_server_rewrite": sum(r["same_text"] for r in specs) if specs else None}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return summary


def rejudge(args) -> None:
    """`--summarize`: judge the sides of OUT/records.jsonl again (exact, tests) and write the summary."""
    cases = {c.id: c for c in load_cases(default_cases())}
    path = args.out / "records.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for rec in records:
        for side in ("local", "server", "one", "spec"):
            if rec.get(side) is not None:
                rec[side] |= judged(rec[side], cases[rec["id"]])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    summarize(records, args)


if __name__ == "__main__":
    main()
