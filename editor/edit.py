"""The pipeline for one file: prompt → decoder → text. The CLI and the bench both call this.

Nothing here writes files or prints; it returns the new text (LF endings restored to the file's own)
and the stats, or raises EditError with a one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from editllm.editor import elision, goimports, prose
from editllm.editor.asks import renames
from editllm.editor.commented import uncomment_removals
from editllm.editor.config import CHOICES
from editllm.editor.costs import draft_schedule
from editllm.editor.datakeys import no_unasked_move
from editllm.editor.decode import Decoder, DecodeStats, TailStop
from editllm.editor.drafter import DEFAULT_DRAFT, CopyDrafter
from editllm.editor.engine import set_adapter
from editllm.editor.errors import EditError
from editllm.editor.focus import Focus, echoed_removal, focus_of, merge_focus, renamed
from editllm.editor.languages import is_prose, language
from editllm.editor.models import LoadedModel
from editllm.editor.prefix import prefix_token_count
from editllm.editor.programcheck import check_program_text
from editllm.editor.prompt import (
    LAYOUTS,
    Prompt,
    end_of_file,
    ends_in_a_block,
    fence_pending,
    finished_at_eos,
    has_fence_line,
    rewrite_prompt,
    strip_opening_fence,
    trailing_chatter,
    wrapper_fence_line,
    wrapper_left,
)
from editllm.editor.prosefocus import Parts, merge_parts, parts_of
from editllm.editor.reflow import keep_end_blanks, keep_layout
from editllm.editor.source import SourceFile, restore_line_endings, split_lines
from editllm.editor.syntax import still_parses
from editllm.editor.twice import drop_reimports, drop_repeats, no_second_definition
from editllm.editor.wholefile import (
    ensure_whole,
    no_unasked_code_deletion,
    no_unasked_prose_deletion,
    still_balanced,
)
from editllm.grammar.tokens import chat_ids, text_ids

MODES = CHOICES["mode"]  # one list for the flag, the config file and this pipeline (editor.config.Mode)


@dataclass
class EditOptions:
    """Decoding choices that do not depend on the file."""

    mode: str = "spec"
    max_new_tokens: int | None = None
    temperature: float = 0.0
    seed: int = 0
    draft: str = DEFAULT_DRAFT
    gamma: int = 3
    monotonic: bool = True  # copy mode: spans must move forward through the file
    layout: str = "default"  # rewrite/spec prompt layout (see editor.prompt.LAYOUTS)
    prefill_copies: bool = True  # copy mode: append copied lines to the KV cache (False: ablation)
    focus: bool = True  # show only the definitions the instruction names (editor.focus)
    # copy mode too (its program's line numbers then count the focused text's lines; training/ builds its
    # examples the same way, `focus.copy_view`); False: copy mode sees the whole file (ablation)
    copy_focus: bool = True
    copy_kv: str = "reread"  # copy mode: "reuse" takes copied lines' cache entries from the prompt (issue 22)
    # copy mode through a server: "loop" (one request per copy tag, the copied lines in context, local copy
    # mode's program) or "one" (the whole program in one request, written without them: remote.modes)
    copy_requests: str = "loop"
    # A peer's decoding loop in place of ours, (lm, prompt ids, max new tokens, stop) -> (output ids, stats),
    # fed the same prompt, focus and merge: the bench's hf-pld. None: our decoder.
    generate: Callable[..., tuple[list[int], DecodeStats]] | None = None
    # Called with (prompt ids, output ids) of every rewrite/spec decode: the bench compares modes' real
    # tokens (where a lossless mode first parts from rewrite), which their decoded text cannot tell.
    on_ids: Callable[[list[int], list[int]], None] | None = None
    allow_deletions: bool = False  # take the model's output as the whole file even where it drops code
    # `check`: a proposal is held to a pre-commit hook's bar, where exit 1 fails the commit: one that reads a name
    # nothing defines where it is used is refused, not noted (a probe: a file that met its rule got a proposal
    # deleting a line whose name the next line reads); one that changes only comments and layout, where the rule
    # speaks of neither, is no proposal (`reflow.cosmetic_only`)
    check: bool = False


@dataclass
class EditResult:
    """The edited file (in its own newline style) and what it cost."""

    source: SourceFile
    new_text: str
    stats: DecodeStats
    raw_output: str  # the model's text, for the bench and debugging
    complete_output: bool = True  # the model wrote the whole file
    merged: bool = False  # it wrote a fragment, which was merged into the original
    fallback: str | None = None  # why copy mode fell back to spec mode
    unmerged_text: str | None = None  # what a diff against the raw output would have produced
    focused: tuple[str, ...] = ()  # the definitions the model was shown alone (editor.focus)
    filled: bool = False  # it wrote placeholders for code it left out, filled from the original (editor.elision)
    imports_added: tuple[str, ...] = ()  # Go packages the edit used unimported, added (`goimports.fix_imports`)
    imports_dropped: tuple[str, ...] = ()  # and those whose every use it took out, dropped
    uncommented: tuple[int, ...] = ()  # lines asked to go that the model commented out, taken out (editor.commented)
    repeats: tuple[str, ...] = ()  # definitions it wrote again word for word, the copies left out (editor.twice)
    reimports: tuple[str, ...] = ()  # import lines it added that import nothing new, left out (editor.twice)
    removed_as_asked: tuple[str, ...] = ()  # definitions asked away that it gave back unchanged, taken out (focus)

    def as_dict(self) -> dict:
        return self.stats.as_dict() | {"path": self.source.path, "complete_output": self.complete_output,
                                       "merged": self.merged, "fallback": self.fallback,
                                       "focused": list(self.focused), "imports_added": list(self.imports_added),
                                       "imports_dropped": list(self.imports_dropped),
                                       "uncommented": list(self.uncommented), "repeats": list(self.repeats),
                                       "reimports": list(self.reimports),
                                       "removed_as_asked": list(self.removed_as_asked)}


def prompt_ids(lm: LoadedModel, prompt: Prompt) -> list[int]:
    return chat_ids(lm.tokenizer, prompt.text, prompt.user)


def prefix_length(lm: LoadedModel, prompt: Prompt, ids: list[int]) -> int:
    """How many of the prompt's ids are its fixed prefix (editor.prefix); 0 when the prefix's own ids
    are not a prefix of them (a tokenizer that merges across the boundary), so a saved state is
    only ever used for exactly the tokens it holds."""
    return prefix_token_count(lm.tokenizer, prompt.prefix, ids)


def source_offset(lm: LoadedModel, prompt: Prompt) -> int:
    """Token index where the file starts in the prompt: the drafter's first cursor."""
    head = prompt.text.split(f"{prompt.fence}", 1)[0]
    return len(chat_ids(lm.tokenizer, head, prompt.user))


def budget(lm: LoadedModel, src: SourceFile, n_prompt: int, requested: int | None,
           text: str | None = None) -> int:
    """Output token budget for regenerating `text` (default: the file); refuse when it cannot fit in
    the context even once more."""
    file_tokens = len(text_ids(lm.tokenizer, src.text if text is None else text))
    room = lm.context_length - n_prompt
    needed = file_tokens + 8
    if needed > room:
        if n_prompt - file_tokens > max(file_tokens, 1024):  # the instruction, not the file, fills the context
            raise EditError(f"the instruction is too long for the model's context ({n_prompt - file_tokens} of "
                            f"the prompt's {n_prompt} tokens are not {src.path}'s; the context holds "
                            f"{lm.context_length}): shorten it")
        whole = text is None or text == src.text  # naming what to edit shows the model that alone (editor.focus)
        raise EditError(
            f"{src.path}: too long for the model's context ({n_prompt} prompt + ~{needed} output tokens "
            f"> {lm.context_length})" + ("; name the function or method to edit (\"in Parser.parse, ...\"), and "
                                         "the model is shown it alone" if whole else "")
        )
    limit = requested if requested is not None else 2 * file_tokens + 256
    return max(1, min(limit, room))


NL = "\n"
REPLACEMENT = "\ufffd"  # what a decoder writes for bytes that are not UTF-8


def finish_text(src: SourceFile, output: str, fence: str, stop_reason: str, max_new: int,
                shown: str | None = None, instruction: str = "", context_full: bool = False) -> str:
    """Cut the model's output at the closing fence (LF text), leaving out the lines the model wrote as
    its own wrapper before it (given `shown`, the text the prompt showed); refuse unfinished output, and output
    that ends in the model's own words about its edit."""
    text = _cut(src, output, fence, stop_reason, max_new, shown, context_full)
    nested = wrapper_fence_line(text, fence)
    if nested is not None:  # the first bare fence line after it closed that block, not the file
        raise EditError(f"{src.path}: the model wrote a code block fenced as the file itself is ({nested[:20]!r}), so "
                        "where the file ends is unclear; nothing written")
    if shown is not None and wrapper_left(text, shown):
        # a fence of the model's own before its closing fence, left in because the lines before it do not end as
        # the file does (editor.prompt.wrapper_lines): the file's last lines may be missing, and what follows the
        # fence is the model's own words (a review: "I removed `twice` as asked." kept at the end of lib.rs)
        raise EditError(f"{src.path}: the model's output ends in a code block the file does not have (a fence "
                        "line of its own before its closing fence?), so the file may be cut short or end in the "
                        "model's own words; nothing written")
    code = language(src.path) != "" and not is_prose(src.path)
    said = None if shown is None else trailing_chatter(text, shown, code, instruction)
    if said is not None:
        raise EditError(f"{src.path}: the output ends in words of the model's own after the file's last line "
                        f"({said.strip()[:50]!r}), not the file's; nothing written")
    return text


def _cut(src: SourceFile, output: str, fence: str, stop_reason: str, max_new: int, shown: str | None,
         context_full: bool = False) -> str:
    """`finish_text`'s cut, before its check of the text. `context_full`: `max_new` was all the room the model's
    context left, so a larger --max-new-tokens cannot help (a probe, session 34, was told to raise it)."""
    prose = is_prose(src.path)
    end = end_of_file(output, fence, shown, prose=prose)
    if end is None:
        if stop_reason == "max_new_tokens" and context_full:
            raise EditError(
                f"{src.path}: the model did not finish the file within {max_new} new tokens, all the room its "
                "context leaves after the prompt; nothing written (name a function or section to edit only that "
                "part, or split the file)"
            )
        if stop_reason == "max_new_tokens":
            raise EditError(
                f"{src.path}: the model did not finish the file within {max_new} new tokens "
                "(raise --max-new-tokens); nothing written"
            )
        if output and not output.endswith("\n"):
            output += "\n"
        end = end_of_file(output + fence, fence, shown, prose=prose)  # EOS after a fence of its own: cut before it
        finished = None if shown is None else finished_at_eos(output[:end], shown)
        if finished is not None:  # EOS right after the file's own closing fence line: the file is finished
            return finished
        if not has_fence_line(output[end:]):  # EOS with no fence at all: the file is cut short, not finished
            wrote = output[:end].rstrip("\n").split("\n") if output[:end].strip() else []
            if wrote and has_fence_line(wrote[-1]):
                if shown is not None and ends_in_a_block(shown):
                    raise EditError(f"{src.path}: the model ended its output with a fence line that may close the "
                                    "file's last code block or the output itself, and stopped; nothing written")
                closer = wrote.pop().strip()  # a short fence of its own: not a line of the file
            else:
                closer = ""
            shown_lines = f"; it was shown {shown.count(NL) + (not shown.endswith(NL))}" if shown else ""
            how = (f"closed its output with {closer}, not the prompt's {fence.strip()}" if closer  # a probe, session
                   else "stopped without the closing fence")  # 40: "stopped without" read wrong, it had closed
            raise EditError(f"{src.path}: the model {how}, so the file may be cut "
                            f"short (it wrote {len(wrote)} lines{shown_lines}); nothing written")
    return output[:end]


def edit_file(lm: LoadedModel, src: SourceFile, instruction: str, opts: EditOptions, on_progress=None) -> EditResult:
    """Run one file through the chosen mode and return its new text."""
    if opts.mode not in MODES:
        raise EditError(f"unknown mode {opts.mode!r}; choose one of {', '.join(MODES)}")
    if opts.mode == "copy":
        return edit_copy(lm, src, instruction, opts, on_progress)
    if opts.layout not in LAYOUTS:
        raise EditError(f"unknown layout {opts.layout!r}; choose one of {', '.join(LAYOUTS)}")
    parts = parts_of(src.path, src.lines, instruction) if opts.focus else None
    if parts is not None:
        return edit_parts(lm, src, instruction, opts, parts, on_progress)
    focus = focus_of(src.text, instruction, src.lines) if opts.focus else None
    if focus is None:
        text, stats, output, filled = regenerate(lm, src, src.text, instruction, opts, on_progress)
        return finish_edit(src, text, instruction, stats, output, opts.allow_deletions, filled)
    edited, stats, output, filled = regenerate(lm, src, focus.text, asked_of_view(instruction), opts, on_progress)
    whole, echoed = merge_shown(src, focus, edited, instruction, opts)
    result = finish_edit(src, whole, instruction, stats, output, opts.allow_deletions, filled)
    result.focused = focus.names
    result.removed_as_asked = echoed
    return result


def asked_of_view(instruction: str) -> str:
    """What the model is asked of a focused view: the instruction, or for a rename that is all it asks, the rename
    alone. A probe (session 42): asked to rename `filter` "and update __all__ and its caller in glob.py", the model,
    shown fnmatch.py's view, also wrote `import glob` and `glob.filter = filter_names` into it (and a self-import for
    "the import and every call" of another file); the other files' words are for those files' views."""
    if not renamed(instruction):
        return instruction
    return " ".join(f"Rename {old} to {new} and update every use of {old}." for old, new in renames(instruction))


def merge_shown(src: SourceFile, focus: Focus, edited: str, instruction: str,
                opts: EditOptions) -> tuple[str, tuple[str, ...]]:
    """The focused output merged back into the file, and the definitions taken out because the model gave back
    unchanged what the instruction asks only to remove (`focus.echoed_removal`): the model's answer otherwise."""
    echoed = echoed_removal(src.text, focus.text, edited, instruction, src.lines)
    return merge_focus(src.text, "" if echoed else edited, instruction, opts.allow_deletions, src.lines), echoed


def edit_parts(lm: LoadedModel, src: SourceFile, instruction: str, opts: EditOptions, parts: Parts,
               on_progress=None) -> EditResult:
    """Prose focus (`editor.prosefocus`): each part rewritten on its own, the rest of the file kept."""
    edited, outputs, total, filled = [], [], DecodeStats(opts.mode), False
    for k, (start, end) in enumerate(parts.ranges):
        words = parts.words[k] if parts.words else None
        text, stats, output, part_filled = regenerate(lm, src, "".join(src.lines[start:end]), instruction, opts,
                                                      on_progress, words)
        filled = filled or part_filled
        edited.append(text)
        outputs.append(output)
        total = _sum(total, stats)
    whole = merge_parts(src.lines, parts, edited)
    result = finish_edit(src, whole, instruction, total, "".join(outputs), opts.allow_deletions, filled)
    result.focused = (parts.why,)
    return result


def _sum(a: DecodeStats, b: DecodeStats) -> DecodeStats:
    """Two runs' costs together (a file edited in parts), the later run's stop reason."""
    return DecodeStats(
        a.mode, prompt_tokens=a.prompt_tokens + b.prompt_tokens, output_tokens=a.output_tokens + b.output_tokens,
        forwards=a.forwards + b.forwards, prefill_seconds=a.prefill_seconds + b.prefill_seconds,
        prefix_tokens=a.prefix_tokens + b.prefix_tokens, prefix_seconds=a.prefix_seconds + b.prefix_seconds,
        prefix_source=b.prefix_source, decode_seconds=a.decode_seconds + b.decode_seconds,
        copy_attempts=a.copy_attempts + b.copy_attempts, copied_tokens=a.copied_tokens + b.copied_tokens,
        accepted_lengths=a.accepted_lengths + b.accepted_lengths, stop_reason=b.stop_reason)


def regenerate(lm: LoadedModel, src: SourceFile, text: str, instruction: str, opts: EditOptions,
               on_progress=None, words: tuple[str, ...] | None = None) -> tuple[str, DecodeStats, str, bool]:
    """Have the model rewrite `text` (the file, or its focus) in rewrite or spec mode: (LF text,
    stats, raw output, whether placeholders for left-out code were filled with the original's lines).
    `words`: the flagged words of a spelling-focus part (editor.prosefocus)."""
    prompt = rewrite_prompt(lm.tokenizer, src.path, text, instruction, LAYOUTS[opts.layout], words)
    ids = prompt_ids(lm, prompt)
    max_new = budget(lm, src, len(ids), opts.max_new_tokens, text)
    if not prompt.prefilled:
        max_new = min(max_new + 64, lm.context_length - len(ids))  # room for the model's own fence line
    set_adapter(lm.engine, False)  # lossless modes run the base model: a selector adapter never changes them
    if prompt.prefilled:
        # "\n" + fence ends in the fence's character, so only a token holding one can complete it: the tail is
        # decoded at those tokens alone (a newline too used to count: a decode at every line of the file)
        stop = TailStop(lm.tokenizer, lambda text: end_of_file(text, prompt.fence, final=False) is not None,
                        chars=prompt.fence[0], pending=lambda text: fence_pending(text, prompt.fence))
    else:  # the opening fence is in the output too: look at all of it (slower; bench layouts only)
        def stop(ids: list[int]) -> bool:
            text = lm.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            body = strip_opening_fence(text, prompt.fence)
            return body is not None and end_of_file(body, prompt.fence, final=False) is not None
    if opts.generate:  # another decoding loop (a server, a bench peer): no local drafter, no cost probe
        out_ids, stats = opts.generate(lm, ids, max_new, stop)
    else:
        drafter = CopyDrafter(opts.gamma, draft_schedule(opts.draft, lm.engine)) if opts.mode == "spec" else None
        decoder = Decoder(lm.engine, temperature=opts.temperature, seed=opts.seed)
        out_ids, stats = decoder.run(
            ids, max_new, stop, drafter, source_offset(lm, prompt) if drafter else 0, opts.mode, on_progress,
            prefix=prefix_length(lm, prompt, ids),
        )
    if opts.on_ids is not None:
        opts.on_ids(list(ids), list(out_ids))
    output = lm.tokenizer.decode(out_ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    body = output if prompt.prefilled else strip_opening_fence(output, prompt.fence)
    if body is None:
        raise EditError(f"{src.path}: the model did not write a fenced code block; nothing written")
    full = max_new >= lm.context_length - len(ids)  # the context, not the budget, stopped it
    edited, filled = elision.fill(text, finish_text(src, body, prompt.fence, stats.stop_reason, max_new, text,
                                                    instruction, full), instruction, src.path)
    ends = not (opts.allow_deletions and text == src.text)  # the whole file under --allow-deletions: as it is
    return prose.guard(src.path, text, edited, instruction, ends), stats, output, filled


def finish_edit(src: SourceFile, text: str, instruction: str, stats: DecodeStats, output: str,
                allow_deletions: bool = False, filled: bool = False) -> EditResult:
    """Whole-file check (merge fragments), a Go file's imports mended to what the edit uses
    (`goimports.fix_imports`), the layout it did not ask for put back (`editor.reflow`), then the
    file's own line endings. The original's lines come
    from `src`; the new text is split here, once, and its lines go on to both stages. `filled`: the model
    wrote placeholders for code it left out (`editor.elision`), so it wrote part of the file: a merge too."""
    if text.count(REPLACEMENT) > src.text.count(REPLACEMENT):  # tokens that end inside a UTF-8 character
        raise EditError(f"{src.path}: the model wrote bytes that are not UTF-8 text (decoded as U+FFFD); "
                        "nothing written")
    lines = split_lines(text)
    whole = ensure_whole(src.text, text, instruction, allow_deletions, src.lines, lines, path=src.path)
    mended, added, dropped = goimports.fix_imports(src.path, src.text, whole.lines,
                                                   src.disk_path.parent if src.disk_path else None)
    if mended is not whole.lines:
        whole = replace(whole, text="".join(mended), lines=mended)
    bare, uncommented = uncomment_removals(src.lines, whole.lines, instruction)
    bare, repeats = drop_repeats(src.path, src.lines, bare)
    bare, reimports = drop_reimports(src.path, src.lines, bare)
    if bare is not whole.lines:
        whole = replace(whole, text="".join(bare), lines=bare)
    still_parses(src.path, src.text, whole.text)
    no_unasked_move(src.path, src.text, whole.text, instruction)
    still_balanced(src.path, src.lines, whole.lines)
    no_second_definition(src.path, src.text, whole.text)
    if not allow_deletions:
        no_unasked_prose_deletion(src.path, src.lines, whole.lines, instruction)
        no_unasked_code_deletion(src.path, src.lines, whole.lines, instruction)
    kept = keep_layout(src.path, src.lines, whole.lines, instruction)  # a re-wrapped comment is put back
    kept = kept if allow_deletions else keep_end_blanks(src.lines, kept, instruction)  # the output as it is
    new_text = restore_line_endings(src, "".join(kept), kept) if kept is not whole.lines else \
        restore_line_endings(src, whole.text, whole.lines)
    unmerged = restore_line_endings(src, text, lines) if whole.merged else new_text
    return EditResult(src, new_text, stats, output, whole.complete and not filled, whole.merged or filled,
                      unmerged_text=unmerged, filled=filled, imports_added=tuple(added),
                      imports_dropped=tuple(dropped), uncommented=tuple(uncommented),
                      repeats=tuple(repeats), reimports=tuple(reimports))


def copy_shown(src: SourceFile, instruction: str, opts: EditOptions) -> tuple[Focus | None, str, list[str]]:
    """What copy mode shows the model: (focus or None, its text, its lines). Focus as in rewrite/spec:
    the program is written over the named definitions (and imports) only, numbered from 1, and merged
    back by name; the prompt shrinks to the function's size. The server backend's copy loop uses it too."""
    focus = focus_of(src.text, instruction, src.lines) if opts.focus and opts.copy_focus else None
    if focus is None:
        return None, src.text, src.lines
    return focus, focus.text, split_lines(focus.text)


def finish_copy(src: SourceFile, text: str, instruction: str, stats, focus: Focus | None,
                opts: EditOptions, lines: list[str] | None = None) -> EditResult:
    """A resolved program's text (over what `copy_shown` showed) as the file's edit: merged back by name
    when focused, then the whole-file check. A `<gen>` span's placeholders for left-out code are filled with
    the original's lines, as in rewrite mode (`editor.elision`). A program whose text breaks code that still
    parses is refused (`editor.programcheck`). `lines`: the shown text's lines, when the caller has them."""
    shown = src.text if focus is None else focus.text
    check_program_text(src.path, shown, text, stats.program, lines or (src.lines if focus is None else None))
    text, filled = elision.fill(shown, text, instruction, src.path)
    if focus is None:
        return finish_edit(src, text, instruction, stats, stats.program, opts.allow_deletions, filled)
    whole, echoed = merge_shown(src, focus, text, instruction, opts)
    result = finish_edit(src, whole, instruction, stats, stats.program, opts.allow_deletions, filled)
    result.focused = focus.names
    result.removed_as_asked = echoed
    return result


def edit_copy(lm: LoadedModel, src: SourceFile, instruction: str, opts: EditOptions, on_progress=None) -> EditResult:
    """Copy mode; an unusable program falls back to spec mode (the reason is kept in the result)."""
    from editllm.editor.copymode import ProgramFailed, copy_prompt_ids, run_copy

    if "</gen>" in src.text or "</gen>" in instruction:  # a <gen> span ends at its first </gen>: none can hold it
        reason = "the file or instruction contains </gen>, which a copy program cannot write"
    else:
        focus, shown, lines = copy_shown(src, instruction, opts)
        ids = copy_prompt_ids(lm, src.path, shown, instruction)
        max_tokens = budget(lm, src, len(ids), opts.max_new_tokens, shown)
        try:
            text, stats = run_copy(lm, src.path, shown, instruction, max_tokens, opts.monotonic, opts.draft,
                                   opts.prefill_copies, prompt_ids=ids, lines=lines, copy_kv=opts.copy_kv)
            return finish_copy(src, text, instruction, stats, focus, opts, lines)
        except (ProgramFailed, EditError) as exc:
            reason = str(exc)
    result = edit_file(lm, src, instruction, replace(opts, mode="spec"), on_progress)
    result.fallback = reason
    return result
