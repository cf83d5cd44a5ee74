"""The benchmark runner behind `editllm bench`: every case in every mode on one loaded model.

Modes are paired per case (same prompt, same model), so speedups are ratios of the same work.
`hf-pld` is the peer a user would pick: transformers' own prompt-lookup decoding as the decoding loop of the
same edit pipeline (prompt, focus, stop, merge: `EditOptions.generate`); `oracle` feeds the
gold program through copy mode's runtime one op per forward (a reference, not a ceiling: a model decodes
its ops token by token, and its program may differ from the gold one). Tests of the edited code run in
`editllm.bench.sandbox`, because model output is untrusted code.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch
from editllm.bench.cases import Case
from editllm.bench.prose_metrics import precision, recall, unrequested
from editllm.bench.sandbox import run_tests
from editllm.bench.stats import summarize_groups
from editllm.editor.copymode import ProgramFailed, run_oracle
from editllm.editor.decode import DecodeStats, eos_ids
from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.focus import focus_of, merge_focus
from editllm.editor.models import LoadedModel
from editllm.editor.source import SourceFile
from editllm.grammar.program import ProgramError, oracle

ALL_MODES = ("rewrite", "spec", "copy", "oracle", "hf-pld")
LOSSLESS = ("rewrite", "spec", "hf-pld")  # the modes that must reproduce rewrite's text (copy and oracle do not)


class ForwardCounter:
    """Counts model forwards (for hf-pld, whose loop we do not own)."""

    def __init__(self, model) -> None:
        self.count = 0
        self.handle = model.register_forward_hook(self._hook)

    def _hook(self, *args) -> None:
        self.count += 1

    def close(self) -> None:
        self.handle.remove()


def hf_pld_generate(lm: LoadedModel, ids: list[int], max_new: int, stop: Callable[[list[int]], bool]):
    """transformers' prompt lookup decoding (10 tokens) as the decoding loop of `EditOptions.generate`:
    the edit pipeline builds its prompt, focus, stop and merge exactly as for rewrite mode."""
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Stop(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            return torch.tensor([stop(input_ids[0, len(ids):].tolist())], device=input_ids.device)

    eos = eos_ids(lm.model, lm.tokenizer)
    counter = ForwardCounter(lm.model)
    start = time.perf_counter()
    try:
        with torch.inference_mode():
            seq = lm.model.generate(
                torch.tensor([ids], device=lm.device), max_new_tokens=max_new, do_sample=False,
                prompt_lookup_num_tokens=10, stopping_criteria=StoppingCriteriaList([Stop()]),
                eos_token_id=sorted(eos), pad_token_id=lm.tokenizer.pad_token_id,
            )
    finally:
        counter.close()
    seconds = time.perf_counter() - start
    out = [t for t in seq[0, len(ids):].tolist() if t not in eos]
    stats = DecodeStats("hf-pld", len(ids), len(out), counter.count, 0.0, seconds)
    stats.stop_reason = "max_new_tokens" if len(out) >= max_new else "stop"
    return out, stats


def oracle_edit(lm: LoadedModel, case: Case, opts: EditOptions) -> tuple[str, DecodeStats, tuple[str, ...]]:
    """The gold program through copy mode's runtime, focused as copy mode focuses: when the instruction
    names definitions (and `copy_focus` is on), the program is the one between those definitions before and
    after, over the focused text, merged back by name."""
    before_focus = focus_of(case.before, case.instruction) if opts.focus and opts.copy_focus else None
    after_focus = focus_of(case.after, case.instruction) if before_focus is not None else None
    if before_focus is None or after_focus is None or after_focus.names != before_focus.names:
        text, stats = run_oracle(lm, case.path, case.before, case.instruction, oracle(case.before, case.after),
                                 opts.prefill_copies, copy_kv=opts.copy_kv)
        return text, stats, ()
    text, stats = run_oracle(lm, case.path, before_focus.text, case.instruction,
                             oracle(before_focus.text, after_focus.text), opts.prefill_copies, copy_kv=opts.copy_kv)
    return merge_focus(case.before, text, case.instruction), stats, before_focus.names


def run_case_mode(lm: LoadedModel, case: Case, mode: str, opts: EditOptions) -> dict:
    """One (case, mode) record; errors are recorded, not raised."""
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
        if mode in ("rewrite", "spec", "copy", "hf-pld"):
            mode_opts = replace(opts, mode="rewrite", generate=hf_pld_generate) if mode == "hf-pld" else \
                replace(opts, mode=mode)
            result = edit_file(lm, src, case.instruction, mode_opts)
            text, stats, complete, merged = result.new_text, result.stats, result.complete_output, result.merged
            rec["fallback"] = result.fallback
            rec["focused"] = list(result.focused)
            rec["program"] = getattr(result.stats, "program", None)
            if merged and case.tests:  # what the user would have got without the merge
                unmerged_text = result.unmerged_text
        elif mode == "oracle":
            if case.after is None:
                raise EditError("the case has no gold text for an oracle program")
            try:
                text, stats, focused = oracle_edit(lm, case, opts)
            except (ProgramError, ProgramFailed) as exc:
                raise EditError(f"oracle program failed: {exc}") from exc
            complete, merged = True, False
            rec["focused"] = list(focused)
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
              previous: dict[tuple[str, str], dict] | None = None) -> dict:
    """Run every case in every mode (rewrite first, so the others can be compared with it).

    `previous` records (same model, from `--reuse`) are taken instead of running that pair again.
    """
    modes = sorted(modes, key=lambda m: (m != "rewrite", ALL_MODES.index(m)))
    warm = SourceFile("warmup.py", "x = 1\n")
    try:
        edit_file(lm, warm, "rename x to y", EditOptions(mode="rewrite", max_new_tokens=8))
    except EditError:
        pass
    records = []
    for case in cases:
        texts: dict[str, str] = {}
        for mode in modes:
            if previous and (case.id, mode) in previous:
                rec = dict(previous[(case.id, mode)], group=case.group)  # older records lack newer columns
                if case.edits is not None and rec["text"] is not None and rec.get("recall") is None:
                    rec.update(prose_quality(case, rec["text"]))
            else:
                rec = run_case_mode(lm, case, mode, opts)
            if rec["text"] is not None:
                texts[mode] = rec["text"]
            if "rewrite" in texts and rec["text"] is not None and mode in LOSSLESS:
                rec["identical_to_rewrite"] = rec["text"] == texts["rewrite"]
            records.append(rec)
            if on_record:
                on_record(rec)
    return {"model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch."),
            "modes": modes, "cases": len(cases), "records": records,
            "summary": summarize_groups(records, modes)}


def kernel_bench(lm: LoadedModel, sizes: tuple[int, ...] = (1, 8, 32, 128, 512), context: int = 300,
                 max_steps: int = 32) -> list[dict]:
    """Appending N tokens in one forward vs N single-token steps (the cost a copy span saves).

    Single steps beyond `max_steps` are extrapolated from the measured per-step time and marked.
    """
    vocab = lm.model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    ctx = torch.randint(0, min(vocab, 150000), (1, context), generator=gen).to(lm.device)
    rows = []

    def timed(fn) -> float:
        if lm.device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if lm.device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter() - t

    with torch.inference_mode():
        _time_append(lm, ctx, ctx[:, :8], 1, timed)  # warm-up: first calls pay allocation and dispatch
        for n in sizes:
            toks = torch.randint(0, min(vocab, 150000), (1, n), generator=gen).to(lm.device)
            one, many, steps = _time_append(lm, ctx, toks, min(n, max_steps), timed)
            many = many * n / steps
            rows.append({"tokens": n, "one_forward_ms": round(one * 1000, 1), "single_steps_ms": round(many * 1000, 1),
                         "ratio": round(many / one, 1), "estimated": steps < n})
    return rows


def _time_append(lm: LoadedModel, ctx: torch.Tensor, toks: torch.Tensor, steps: int, timed) -> tuple[float, float, int]:
    """Seconds for one forward of `toks` after `ctx`, and for `steps` single-token forwards."""
    from transformers import DynamicCache

    cache = DynamicCache(config=lm.model.config)
    lm.model(input_ids=ctx, past_key_values=cache, logits_to_keep=1)
    one = timed(lambda: lm.model(input_ids=toks, past_key_values=cache, logits_to_keep=1))
    cache.crop(-toks.shape[1])

    def single() -> None:
        for i in range(steps):
            lm.model(input_ids=toks[:, i:i + 1], past_key_values=cache, logits_to_keep=1)

    return one, timed(single), steps
