"""The benchmark runner behind `editllm bench`: every case in every mode on one loaded model.

Modes are paired per case (same prompt, same model), so speedups are ratios of the same work; with
`repeat` > 1 the runs interleave (case by case, round by round, mode by mode) so that a busy moment of
the machine hits every mode of a round alike, and each record keeps every run's seconds and their median.
Peers are decoding loops plugged into the same edit pipeline (prompt, focus, stop, merge:
`EditOptions.generate`): `hf-pld` (transformers' prompt-lookup decoding), `hf-greedy` (its plain greedy
`generate`: the GPU issue's reference, editllm's prompt decoded by transformers' own loop) and llama.cpp's own decoders
(`editllm.bench.peers`: llama-server greedy, its n-gram speculation, a whole-file rewrite through it,
llama-cpp-python's high-level greedy). `oracle` feeds the gold program through copy mode's runtime one op
per forward (a reference, not a ceiling: a model decodes its ops token by token, and its program may
differ from the gold one). Each case's limit is measured in the same run: one forward over the prompt plus
rewrite's output, what any lossless decoder must at least read. Tests of the edited code run in
`editllm.bench.sandbox`, because model output is untrusted code.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import torch
from editllm.bench.cases import Case
from editllm.bench.peers import PEER_MODES, PLD_TOKENS, Peers
from editllm.bench.prose_metrics import precision, recall, unrequested
from editllm.bench.sandbox import run_tests
from editllm.bench.stats import summarize_groups
from editllm.editor.copymode import ProgramFailed, run_oracle
from editllm.editor.decode import DecodeStats, eos_ids
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.focus import copy_view, merge_focus
from editllm.editor.models import LoadedModel
from editllm.editor.source import SourceFile
from editllm.grammar.program import ProgramError, oracle

ALL_MODES = ("rewrite", "spec", "copy", "copy-reuse", "oracle", "hf-pld", "hf-greedy", *PEER_MODES)
# Bench modes that are copy mode with a setting fixed, so that both settings pair case by case in one run (the
# run's `--copy-kv` applies to `copy` and `oracle`).
COPY_VARIANTS = {"copy-reuse": {"copy_kv": "reuse"}}
SERVER_MODES = ("rewrite", "spec", "copy")  # what `bench --server URL` runs through that server
# The modes that must reproduce rewrite's text (copy and oracle do not; server-ngram-whole reads another prompt).
LOSSLESS = ("rewrite", "spec", "hf-pld", "hf-greedy", "server", "server-ngram", "llamacpp-greedy")
NEAR_TIE = 0.1  # a mismatch is a near-tie when rewrite's top-2 logits differ by less than this where they part


class ForwardCounter:
    """Counts model forwards (for hf-pld, whose loop we do not own)."""

    def __init__(self, model, on: bool = True) -> None:
        self.count = 0
        self.handle = model.register_forward_hook(self._hook) if on else None

    def _hook(self, *args) -> None:
        self.count += 1

    def close(self) -> None:
        if self.handle is not None:
            self.handle.remove()


def transformers_model(lm: LoadedModel):
    """The transformers model itself: under a peft wrapper, its base model (whose `generate` and forward run)."""
    return lm.model.get_base_model() if hasattr(lm.model, "get_base_model") else lm.model


class HFCompile:
    """What became of transformers' compiled greedy loop in this process: `error` is why it ran eagerly
    (a failed `torch.compile`), reported beside the bench's results as the static engine's graph_error is."""

    error: str | None = None
    caches: dict[tuple[int, int], object] = {}  # (id of the model, size) -> its StaticCache, reused

    @staticmethod
    def cache(lm: LoadedModel, size: int):
        """The model's static cache of `size` entries: one object for every call (emptied before each), as
        transformers' docs reuse it. A new cache each call (what `cache_implementation="static"` makes) puts its
        tensors at new addresses, which the compiled step's CUDA graph is recorded against."""
        from transformers import StaticCache

        model = transformers_model(lm)
        key = (id(model), size)
        if key not in HFCompile.caches:
            HFCompile.caches[key] = StaticCache(config=model.config, max_cache_len=size)
        return HFCompile.caches[key]

    @staticmethod
    def state(lm: LoadedModel) -> str:
        """How hf-greedy ran on `lm`: compiled only if transformers made its compiled call (`generate` decides
        that itself, and may not) and no compile failed."""
        if HFCompile.error:
            return "static cache, eager"
        if getattr(transformers_model(lm), "_compiled_call", None) is None:
            return "static cache, not compiled (transformers chose not to)"
        return "static cache, compiled"


STATIC_CACHE_STEP = 8192  # hf-greedy's static cache is sized in these steps, so one compile serves every case


def hf_pld_generate(lm: LoadedModel, ids: list[int], max_new: int, stop: Callable[[list[int]], bool],
                    lookup: int | None = 10, name: str = "hf-pld", static: bool = False):
    """transformers' prompt lookup decoding (`lookup` tokens; None: its plain greedy `generate`, the
    `hf-greedy` peer) as the decoding loop of `EditOptions.generate`: the edit pipeline builds its prompt,
    focus, stop and merge exactly as for rewrite mode.

    `static` (greedy only; the bench sets it on a GPU) is transformers' own fast path, tuned as a user would
    tune it: a static cache, whose decode step `generate` compiles (torch.compile with CUDA graphs). The
    cache is sized in `STATIC_CACHE_STEP`s, not to each case, or every case would compile anew; the output
    is still cut at `max_new`. A compile that fails is reported once (`HFCompile.error`) and the loop runs
    eagerly on the static cache from then on."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Stop(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            out = input_ids[0, len(ids):].tolist()
            return torch.tensor([len(out) >= max_new or stop(out)], device=input_ids.device)

    eos = eos_ids(lm.model, lm.tokenizer)
    extra: dict = {}
    limit = max_new
    if static and lookup is None:
        size = min(lm.context_length, -(-(len(ids) + max_new) // STATIC_CACHE_STEP) * STATIC_CACHE_STEP)
        limit = max(max_new, size - len(ids))
        try:
            extra = {"past_key_values": HFCompile.cache(lm, size)}
        except TypeError:  # a transformers whose StaticCache is built otherwise: `generate` makes its own
            extra = {"cache_implementation": "static"}
        extra |= {"disable_compile": True} if HFCompile.error else {}
    # not under the compiler (a Python hook in the traced call): greedy runs one forward a token it writes
    counter = ForwardCounter(transformers_model(lm), on=not extra)

    def generate(**more):
        with torch.inference_mode():  # where the reused cache's tensors were made
            if "past_key_values" in extra:
                extra["past_key_values"].reset()
            return lm.model.generate(
                torch.tensor([ids], device=lm.device), max_new_tokens=limit, do_sample=False,
                prompt_lookup_num_tokens=lookup, stopping_criteria=StoppingCriteriaList([Stop()]),
                eos_token_id=sorted(eos), pad_token_id=lm.tokenizer.pad_token_id, **extra, **more,
            )

    start = time.perf_counter()
    try:
        try:
            seq = generate()
        except (EditError, torch.OutOfMemoryError):
            raise
        except Exception as exc:  # noqa: BLE001 - any compiler failure: the peer runs eagerly, and says why
            if not extra or HFCompile.error:
                raise
            HFCompile.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            start = time.perf_counter()
            seq = generate(disable_compile=True)
    finally:
        counter.close()
    seconds = time.perf_counter() - start
    out = [t for t in seq[0, len(ids):].tolist() if t not in eos][:max_new]
    forwards = counter.count if not extra else seq.shape[1] - len(ids)
    stats = DecodeStats(name, prompt_tokens=len(ids), output_tokens=len(out), forwards=forwards,
                        decode_seconds=seconds)
    stats.stop_reason = "max_new_tokens" if len(out) >= max_new else "stop"
    return out, stats


def mode_options(lm: LoadedModel, mode: str, opts: EditOptions, peers: Peers | None, trace: dict) -> EditOptions:
    """The edit options that run `mode`: editllm's own modes as the product runs them (rewrite included:
    same saved prefix, same batches), a peer as a `generate` hook on rewrite's pipeline, server-ngram-whole
    with focus off (the whole file asked of the server). Every mode's prompt and output ids go into
    `trace` (`on_ids`): the limit is measured on rewrite's, and a lossless mode's text that parts from
    rewrite's is placed at its first differing token."""
    def record(ids: list[int], out: list[int]) -> None:
        trace.update(prompt=ids, out=out)

    if mode == "hf-pld":
        loop = partial(hf_pld_generate, lookup=peers.pld_tokens if peers is not None else PLD_TOKENS)
    elif mode == "hf-greedy":
        loop = partial(hf_pld_generate, lookup=None, name="hf-greedy", static=str(lm.device).startswith("cuda"))
    elif mode in PEER_MODES:
        if peers is None:
            raise EditError(f"mode {mode} needs the llama.cpp peers (editllm bench starts them)")
        loop = peers.hook(mode, lm.engine.eos)
    elif mode in COPY_VARIANTS:
        return replace(opts, mode="copy", on_ids=record, **COPY_VARIANTS[mode])
    else:
        return replace(opts, mode=mode, on_ids=record)
    focus = False if mode == "server-ngram-whole" else opts.focus
    return replace(opts, mode="rewrite", generate=loop, focus=focus, on_ids=record)


def oracle_edit(lm: LoadedModel, case: Case, opts: EditOptions) -> tuple[str, DecodeStats, tuple[str, ...]]:
    """The gold program through copy mode's runtime, focused as copy mode focuses (`copy_view`): when the
    instruction names definitions (and `copy_focus` is on), the program is the one between those
    definitions before and after, over the focused text, merged back by name."""
    shown, goal, names = (copy_view(case.before, case.after, case.instruction) if opts.focus and opts.copy_focus
                          else (case.before, case.after, ()))
    text, stats = run_oracle(lm, case.path, shown, case.instruction, oracle(shown, goal), opts.prefill_copies,
                             copy_kv=opts.copy_kv)
    return (merge_focus(case.before, text, case.instruction) if names else text), stats, names


def remote(lm) -> bool:
    """Whether `lm` is a model served elsewhere (`bench --server`): no forward runs here, so no limit or
    logit gap is measured."""
    return getattr(lm, "client", None) is not None


def edit_any(lm, src: SourceFile, instruction: str, opts: EditOptions):
    """One edit as the product runs it: in this process, or through the server `lm` stands for."""
    if remote(lm):
        from editllm.remote.modes import edit_remote

        return edit_remote(lm, src, instruction, opts)
    return edit_file(lm, src, instruction, opts)


def run_case_mode(lm: LoadedModel, case: Case, mode: str, opts: EditOptions, peers: Peers | None = None,
                  trace: dict | None = None) -> dict:
    """One (case, mode) record; errors are recorded, not raised. `trace` (when given) receives the
    prompt and output ids of a mode run through a hook, and every mode's raw output."""
    trace = {} if trace is None else trace
    src = SourceFile(case.path, case.before)
    rec: dict = {"id": case.id, "kind": case.kind, "mode": mode, "lines": case.lines, "seconds": None,
                 "prompt_tokens": None, "output_tokens": None, "forwards": None, "tokens_per_forward": None,
                 "copied_share": None, "exact_match": None, "tests_passed": None, "identical_to_rewrite": None,
                 "complete_output": None, "merged": None, "tests_passed_unmerged": None, "fallback": None,
                 "layout": opts.layout, "focused": None, "error": None, "text": None, "prefill_seconds": None,
                 "group": case.group}
    if case.edits is not None:
        rec.update(recall=None, precision=None, unrequested_lines=None)
    start = time.perf_counter()
    unmerged_text = None
    try:
        if mode == "oracle":
            if case.after is None:
                raise EditError("the case has no gold text for an oracle program")
            try:
                text, stats, focused = oracle_edit(lm, case, opts)
            except (ProgramError, ProgramFailed) as exc:
                raise EditError(f"oracle program failed: {exc}") from exc
            complete, merged = True, False
            rec["focused"] = list(focused)
        elif mode in ALL_MODES:
            result = edit_any(lm, src, case.instruction, mode_options(lm, mode, opts, peers, trace))
            text, stats, complete, merged = result.new_text, result.stats, result.complete_output, result.merged
            rec["fallback"] = result.fallback
            rec["focused"] = list(result.focused)
            rec["program"] = getattr(result.stats, "program", None)
            rec["retries"] = getattr(result.stats, "retries", None)  # copy mode's asks again (an idle gen span)
            rec["set_aside"] = getattr(result.stats, "set_aside", None)  # the programs those asks replaced
            if merged and case.tests:  # what the user would have got without the merge
                unmerged_text = result.unmerged_text
        else:
            raise EditError(f"mode {mode} is not built yet")
    except EditError as exc:
        rec["error"] = str(exc)
        return rec
    seconds = time.perf_counter() - start  # the edit alone: the case's tests run after the clock stops
    if unmerged_text is not None:
        rec["tests_passed_unmerged"] = run_tests(unmerged_text, case.tests)
    rec.update(
        seconds=round(seconds, 3), prompt_tokens=stats.prompt_tokens,
        prefill_seconds=round(stats.prefill_seconds, 3) if stats.prefill_seconds else None,
        output_tokens=stats.output_tokens, forwards=stats.forwards,
        tokens_per_forward=round(stats.tokens_per_forward, 3), copied_share=round(stats.copied_share, 3),
        reused_tokens=getattr(stats, "reused_tokens", None),
        prompt_read=stats.prompt_tokens - stats.prefix_tokens,  # the fixed part kept or loaded is not read
        exact_match=(text == case.after) if case.after is not None else None,
        tests_passed=run_tests(text, case.tests), complete_output=complete, merged=merged, text=text,
    )
    if not merged:
        rec["tests_passed_unmerged"] = rec["tests_passed"]
    if case.edits is not None:
        rec.update(prose_quality(case, text))
    return rec


def prose_quality(case: Case, text: str) -> dict:
    """How well `text` makes the edits a prose case asks for (`prose_metrics`): recall (asked lines now
    as asked), precision (asked ÷ all changed lines, a modified line once) and the unasked lines."""
    return {"recall": recall(case.before, text, case.edits), "precision": precision(case.before, text, case.edits),
            "unrequested_lines": unrequested(case.before, text, case.edits)}


def run_bench(lm: LoadedModel, cases: list[Case], modes: list[str], opts: EditOptions,
              on_record: Callable[[dict], None] | None = None,
              previous: dict[tuple[str, str], dict] | None = None, repeat: int = 1,
              peers: Peers | None = None, on_case: Callable[[dict], None] | None = None) -> dict:
    """Run every case in every mode `repeat` times (rewrite first, so the others can be compared with it).

    Runs interleave case by case, round by round, mode by mode; a case's records are then made from its
    rounds (`merge_runs`: every run's seconds, their median) and get the case's limit (`measure_limit`,
    once per round, median) and, for a lossless mode whose text is not rewrite's, the top-2 logit gap
    where it parted from rewrite (`first_difference`). `on_record` hears every single run.
    `previous` records (same model, from `--reuse`) are taken instead of running that pair again.
    `on_case` gets the results so far after each case (a run cut short by a time limit still leaves them).
    """
    modes = sorted(modes, key=lambda m: (m != "rewrite", ALL_MODES.index(m)))
    warm = SourceFile("warmup.py", "x = 1\n")
    # rewrite's first forward, and hf-greedy's compile on a GPU (a minute, once), stay out of every figure
    for mode in ("rewrite", *(["hf-greedy"] if "hf-greedy" in modes else [])):
        try:
            edit_any(lm, warm, "rename x to y", mode_options(lm, mode, EditOptions(max_new_tokens=8), peers, {}))
        except EditError:
            pass
    records = []
    for case in cases:
        runs: dict[str, list[dict]] = {m: [] for m in modes}
        traces: dict[str, dict] = {}
        limits: list[float] = []
        for _round in range(repeat):
            for mode in modes:
                if previous and (case.id, mode) in previous:
                    if runs[mode]:
                        continue  # a reused record is one run, not one per round
                    rec = dict(previous[(case.id, mode)], group=case.group)  # older records lack newer columns
                    if case.edits is not None and rec["text"] is not None and rec.get("recall") is None:
                        rec.update(prose_quality(case, rec["text"]))
                else:
                    trace: dict = {}
                    rec = run_case_mode(lm, case, mode, opts, peers, trace)
                    traces.setdefault(mode, trace)
                runs[mode].append(rec)
                if on_record:
                    on_record(rec)
            base = traces.get("rewrite", {})
            if "out" in base and runs["rewrite"][-1]["error"] is None and not remote(lm):
                limits.append(measure_limit(lm, base["prompt"] + base["out"]))
        limit = round(statistics.median(limits), 3) if limits else None
        texts: dict[str, str] = {}
        for mode in modes:
            rec = merge_runs(runs[mode])
            if rec["text"] is not None:
                texts[mode] = rec["text"]
            ours, theirs = traces.get("rewrite", {}), traces.get(mode, {})
            if "rewrite" in texts and rec["text"] is not None and mode in LOSSLESS:
                rec["identical_to_rewrite"] = rec["text"] == texts["rewrite"]
            elif mode in LOSSLESS and mode != "rewrite" and "out" in ours and "out" in theirs:
                # a lossless mode whose output editllm refused (say, no longer valid Python) is judged by its
                # tokens: a decode that parted from rewrite's must not hide behind the refusal
                rec["identical_to_rewrite"] = ours["out"] == theirs["out"]
            if rec.get("identical_to_rewrite") is False and "out" in ours and not remote(lm):
                rec["first_difference"] = first_difference(lm, ours, theirs)
            rec["limit_seconds"] = limit
            rec["limit_ratio"] = round(rec["seconds"] / limit, 3) if limit and rec["seconds"] else None
            records.append(rec)
        if on_case and len(records) < len(cases) * len(modes):
            on_case(bench_results(lm, modes, len(records) // len(modes), repeat, records) | {"partial": len(cases)})
    return bench_results(lm, modes, len(cases), repeat, records)


def bench_results(lm: LoadedModel, modes: list[str], cases: int, repeat: int, records: list[dict]) -> dict:
    """The bench's results over `records` (`cases` of them per mode), summarized per group of cases."""
    return {"model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch."),
            "modes": modes, "cases": cases, "repeat": repeat, "records": list(records),
            "summary": summarize_groups(records, modes)}


def merge_runs(runs: list[dict]) -> dict:
    """One record from a (case, mode)'s runs: the first run's fields, `seconds` the median of every run's
    (all kept in `seconds_runs`), and whether every run wrote the same text. A run that failed makes the
    record failed (the error is what the report must show)."""
    failed = [r for r in runs if r["error"] is not None]
    rec = dict(failed[0] if failed else runs[0])
    rec["seconds_runs"] = [r["seconds"] for r in runs if r["seconds"] is not None]
    if not failed:
        rec["seconds"] = round(statistics.median(rec["seconds_runs"]), 3)
        prefill = [r["prefill_seconds"] for r in runs if r.get("prefill_seconds")]
        rec["prefill_seconds"] = round(statistics.median(prefill), 3) if prefill else None
        rec["same_text_every_run"] = all(r["text"] == rec["text"] for r in runs)
    return rec


def measure_limit(lm: LoadedModel, ids: list[int]) -> float:
    """Seconds of one forward over `ids` (a case's prompt plus rewrite's output; the engine cuts it into
    n_batch chunks), keeping one row of logits, after a short warm-up: what any lossless decoder must at
    least spend reading that text once in batches (issue 21's limit)."""
    engine = lm.engine
    engine.reset()
    engine.forward(ids[:16], keep=1)  # warm-up: first calls pay allocation
    engine.reset()
    start = time.perf_counter()
    rows = engine.forward(ids, keep=1)
    float(rows[0, 0])  # waits for the device (CUDA) before the clock stops
    seconds = time.perf_counter() - start
    engine.reset()
    return seconds


def first_difference(lm: LoadedModel, rewrite: dict, other: dict) -> dict | None:
    """Where a lossless mode's output first parts from rewrite's, and rewrite's top-2 logit gap there
    (prompt plus the common prefix, one forward on the engine). A gap under NEAR_TIE means a batched
    forward may have flipped a near-tie; a larger one points at a bug.

    Both modes' output ids come from the trace (`EditOptions.on_ids`); a mode that recorded none (its text
    is not a decode of its own, e.g. copy mode's program) is not placed."""
    ref = rewrite["out"]
    if "out" not in other:
        return None
    theirs = other["out"]
    k = next((i for i, (a, b) in enumerate(zip(ref, theirs, strict=False)) if a != b), min(len(ref), len(theirs)))
    other_token = theirs[k] if k < len(theirs) else None
    engine = lm.engine
    engine.reset()
    row = torch.as_tensor(engine.forward(rewrite["prompt"] + ref[:k], keep=1)[0]).float()  # numpy on llama.cpp
    top = torch.topk(row, 2)
    gap = float(top.values[0] - top.values[1])
    engine.reset()
    return {"token": k, "rewrite_token": ref[k] if k < len(ref) else None, "other_token": other_token,
            "top2": [int(t) for t in top.indices], "gap": round(gap, 4), "near_tie": gap < NEAR_TIE}


def kernel_bench(lm: LoadedModel, sizes: tuple[int, ...] = (1, 8, 32, 128, 512), context: int = 300,
                 max_steps: int = 32) -> list[dict]:
    """Appending N tokens in one forward vs N single-token steps after `context` tokens (the cost a copy
    span or a verified draft saves), through the engine interface, so both engines are measured alike.

    Single steps beyond `max_steps` are extrapolated from the measured per-step time and marked.
    """
    engine = lm.engine
    vocab = min(int(engine.vocab_size), 150000)
    gen = torch.Generator().manual_seed(0)
    ctx = torch.randint(0, vocab, (context,), generator=gen).tolist()
    cuda = str(lm.device).startswith("cuda")

    def timed(fn) -> float:
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t

    rows = []
    _time_append(engine, ctx, ctx[:8], 1, timed)  # warm-up: first calls pay allocation and dispatch
    for n in sizes:
        toks = torch.randint(0, vocab, (n,), generator=gen).tolist()
        one, many, steps = _time_append(engine, ctx, toks, min(n, max_steps), timed)
        many = many * n / steps
        rows.append({"tokens": n, "one_forward_ms": round(one * 1000, 1), "single_steps_ms": round(many * 1000, 1),
                     "ratio": round(many / one, 1), "estimated": steps < n})
    engine.reset()
    return rows


def _time_append(engine, ctx: list[int], toks: list[int], steps: int, timed) -> tuple[float, float, int]:
    """Seconds for one forward of `toks` after `ctx`, and for `steps` single-token forwards there. An engine
    that captures a shape after some forwards of it (the static engine's CUDA graphs: `calls_to_warm`) runs
    both that many times first, so the replay is timed, not the eager first use or the capture."""
    engine.reset()
    engine.forward(ctx, keep=1)

    def single() -> None:
        for t in toks[:steps]:
            engine.forward([t], keep=1)

    for _ in range(getattr(engine, "calls_to_warm", 0)):
        engine.forward(toks, keep=1)
        engine.truncate(len(toks))
        single()
        engine.truncate(steps)
    one = timed(lambda: engine.forward(toks, keep=1))
    engine.truncate(len(toks))
    many = timed(single)
    engine.truncate(steps)
    return one, many, steps
