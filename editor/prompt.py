"""Chat prompts for whole-file editing.

The file goes in a fenced block and the instruction after it (the 0.5B model did measurably better
with the instruction last); the assistant turn is prefilled with the opening fence so the first
output token is already file content. The fence is longer than any backtick run in the file (and at
least four backticks for prose), so a line starting with it can only be the model closing the block.
Lines the model writes as its own wrapper just before that fence (a three-backtick close, prose) are
recognised from the finished output and the shown file (`wrapper_lines`), never from the fence alone.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from editllm.editor import prose
from editllm.editor.align import line_opcodes
from editllm.editor.blocks import blank_tail
from editllm.editor.languages import PROSE, language

SYSTEM = (
    "You are a precise code editor. You are given one file and an instruction. Apply exactly the "
    "change the instruction asks for and nothing else, then output the complete updated file."
)

def fence_for(text: str, shortest: int = 3) -> str:
    """`shortest` backticks, or one more than the longest backtick run in the file.

    Prose files get at least four (`rewrite_prompt`): with three, a code block the edit adds to a
    README without one would close the file at its first fence line and lose the rest.
    """
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    return "`" * max(shortest, max(runs) + 1 if runs else 3)


@dataclass(frozen=True)
class Layout:
    """How the rewrite prompt is laid out; the bench compares these (`--layout`)."""

    instruction_last: bool = True  # the instruction after the code (better for the 0.5B model)
    complete_wording: bool = True  # ask explicitly for every line of the file
    prefill_fence: bool = True  # the assistant turn starts with the opening fence
    system: bool = True  # our system prompt (else the model's default)
    fixed_first: bool = True  # the fixed wording before the file, so the prompt starts with a fixed prefix


LAYOUTS = {
    "default": Layout(),
    "instruction-first": Layout(instruction_last=False),
    "no-complete-wording": Layout(complete_wording=False),
    "no-prefill": Layout(prefill_fence=False),
    "no-system": Layout(system=False),
    "fixed-last": Layout(fixed_first=False),  # the layout before the saved prefix state (no fixed prefix)
}


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt and how to recognise the end of the model's file in its output."""

    text: str  # the full prompt (ending with the assistant's opening fence line when prefilled)
    fence: str  # the closing fence the output must end with
    file_text: str  # the file as shown to the model (LF endings)
    prefilled: bool = True  # False: the model must open the fenced block itself
    prefix: str = ""  # the start of `text` that is the same for every file and instruction (editor.prefix)
    user: tuple[int, int] = (0, 0)  # where the request (path, file, instruction) is in `text`: read as text


def rewrite_prompt(tokenizer, path: str, file_text: str, instruction: str,
                   layout: Layout = LAYOUTS["default"], words: tuple[str, ...] | None = None) -> Prompt:
    """Prompt for rewrite and spec modes: the model writes the whole file back.

    Everything that does not depend on the request (chat template start, system message, the wording
    that asks for the whole file) comes first, so it is one fixed prefix whose cache state is saved
    once and loaded instead of re-read (editor.prefix); path, file, instruction and the prefilled
    fence follow. The fixed wording ends with a blank line, so the file's `File:` line starts a new
    token and the prefix's token ids are a prefix of the whole prompt's ids. `words`: the flagged
    words a spelling request names (spelling focus chose them over the whole file; None: those of
    `file_text`).
    """
    lang = language(path)
    fence = fence_for(file_text, 4 if lang in PROSE else 3)
    body = file_text if file_text.endswith("\n") or not file_text else file_text + "\n"
    code = f"File: {path}\n\n{fence}{lang}\n{body}{fence}\n\n"
    ask = f"Instruction: {instruction.strip()}\n\n"
    style = prose.wording() if lang in PROSE else None  # multi-edit wording for text (issue 19)
    if lang in PROSE and (flagged := prose.request_hint(file_text, instruction, words)):
        ask += flagged + "\n\n"
    tail = (style.tail if style else "Output the complete updated file in one fenced code block: every line, "
            "changed or not. Change only what the instruction asks for.") if layout.complete_wording else \
        "Output the updated file in a fenced code block."
    fixed = tail + "\n\n" if layout.fixed_first else ""
    variable = code + ask if layout.instruction_last else ask + code
    user = fixed + variable.rstrip("\n") if layout.fixed_first else variable + tail
    messages = [{"role": "user", "content": user}]
    if layout.system:
        messages.insert(0, {"role": "system", "content": style.system if style else SYSTEM})
    head = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    at = head.find(user)
    prefix = head[: at + len(fixed)] if layout.fixed_first and at >= 0 else ""
    span = (at, at + len(user)) if at >= 0 else (0, 0)  # a template that changes the text: tokenized as before
    if layout.prefill_fence:
        return Prompt(text=f"{head}{fence}{lang}\n", fence=fence, file_text=file_text, prefix=prefix, user=span)
    return Prompt(text=head, fence=fence, file_text=file_text, prefilled=False, prefix=prefix, user=span)


def strip_opening_fence(output: str, fence: str) -> str | None:
    """Without a prefilled fence the model opens the block itself (after any prose): drop up to it."""
    m = re.search(rf"(?m)^{re.escape(fence)}[^\n`]*\n", output)
    return None if m is None else output[m.end():]


def end_of_file(output: str, fence: str, shown: str | None = None, final: bool = True,
                prose: bool = False) -> int | None:
    """Index where the file ends in `output` (just after the newline before the closing fence).

    None while the fence has not appeared. The closing fence is a line of the fence (or a longer run of its
    character) and nothing else but spaces, as CommonMark closes a block: a line like "````sh" is a code
    block the model writes into the file, which used to end the file there and lose the rest. The line
    must be finished: while decoding (`final` False) a fence at the very end of the output may still gain
    an info string, so the end waits for the next token (`fence_pending`); in a finished output (EOS after
    it) it ends the file. An output that starts with the fence is an empty file. This alone decides when
    decoding stops (TailStop), token by token, so rewrite and spec stop at the same token. Given `shown`
    (the file as the prompt showed it), the end also moves back over the lines the model wrote as its own
    wrapper before the real fence (`wrapper_lines`); that looks only at the finished output, so both modes
    cut it alike. `prose`: the shown file is prose, which no whole-file check guards, so the wrapper is cut only
    where the output ends as the file does (`_ends_as_the_file`).
    """
    idx = _closing_line(output, fence, final)
    if idx is None:
        return None
    if shown is None or idx == 0:
        return idx
    lines = output[:idx].split("\n")[:-1]
    keep = len(lines) - wrapper_lines(lines, shown.split("\n")[:-1] if shown.endswith("\n") else shown.split("\n"),
                                      prose)
    return sum(len(line) + 1 for line in lines[:keep])


def _closing_line(output: str, fence: str, final: bool) -> int | None:
    """Where the first closing fence line of `output` starts (see `end_of_file`), else None."""
    starts = [0] if output.startswith(fence) else []
    starts += [m.start() + 1 for m in re.finditer(re.escape("\n" + fence), output)]
    for at in starts:
        end = output.find("\n", at)
        rest = output[at + len(fence):] if end < 0 else output[at + len(fence):end]
        if not rest.lstrip(fence[0]).strip(" \t") and (end >= 0 or final):
            return at
    return None


def wrapper_fence_line(text: str, fence: str) -> str | None:
    """A line of the cut file text that starts with the wrapper's fence (an info string after it: bare ones end
    the file), else None. The shown file has none (`fence_for` picks a fence longer than any run in it), so
    the model opened a code block with the wrapper's own fence, and the line that closed it ended the file."""
    return next((line for line in text.split("\n") if line.startswith(fence)), None)


def fence_pending(output: str, fence: str) -> bool:
    """Whether `output` ends in a line that is the closing fence so far: the next token says whether it stays
    one (a newline, EOS) or becomes a code block's opening ("````sh"), so the stop must look at it."""
    last = output.rsplit("\n", 1)[-1]
    return last.startswith(fence) and not last[len(fence):].lstrip(fence[0]).strip(" \t")


FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def has_fence_line(text: str) -> bool:
    """Whether any line of `text` is a code-fence line."""
    return any(_fence(line) for line in text.split("\n"))


def _fence(line: str) -> tuple[str, str] | None:
    """(fence run, info string) when the line is a code-fence line (CommonMark, indentation ignored)."""
    m = FENCE_LINE.match(line)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1), m.group(2).strip()


def underline(lines: list[str], k: int) -> bool:
    """Whether line `k`, outside any code block, is a reStructuredText section underline of tildes (`Usage` over
    `~~~~~`), not a fence: a run of tildes alone, at least as long as the title right above it (a line of words at
    the margin), with a line after it that is not a fence (a model's own `~~~` after the file's last line is
    followed by the real closing fence). Read as fences, the underlines of a reST file paired up and hid every
    section between them from the spelling check (session 28). CommonMark would open a fence there, but Markdown
    writers put no bare tilde run under a heading's text. Read for prose only (`spelling`): the wrapper checks keep
    CommonMark's reading, since a code file's own `~~~` lines (a separator in a string) are no titles' underlines."""
    line = lines[k].strip()
    if k == 0 or k + 1 >= len(lines) or not line or set(line) != {"~"} or _fence(lines[k + 1]) is not None:
        return False
    above = lines[k - 1].rstrip()
    return above[:1].isalnum() and _fence(above) is None and len(above) <= len(line)


def open_fence(lines: list[str]) -> int | None:
    """Index of the line that opened the fenced code block still open after `lines`; None if all closed.

    A block opened by a run of N backticks (or tildes) is closed only by a bare run of at least N of
    the same character, as in CommonMark.
    """
    opener: int | None = None
    for k, line in enumerate(lines):
        f = _fence(line)
        if f is None:
            continue
        if opener is None:
            opener = k
            continue
        run = _fence(lines[opener])[0]
        if f[0][0] == run[0] and len(f[0]) >= len(run) and not f[1]:
            opener = None
    return opener


def _bare(line: str) -> bool:
    f = _fence(line)
    return f is not None and not f[1]


def wrapper_lines(body: list[str], shown: list[str], prose: bool = False) -> int:
    """How many trailing lines of `body` (the output before the real closing fence) are wrapper.

    Small models close a file that itself holds fenced code blocks with the usual three backticks
    first, or write that fence, then prose, then the real one (issue 19). Such a bare fence line
    leaves the output's code blocks in another state than the file's (a block left open, or the file's
    own open block closed), or adds an empty block at the end: from it on, the lines are wrapper. A
    file that legitimately ends with a fence line ends in the same state, so it is kept. Only text
    after the file's own last line (or a line like it) is ever cut, so an output that went astray
    earlier is left whole for the whole-file check. Blank lines before the (real or cut) wrapper are
    kept only up to as many as the file ends with.
    """
    lines = list(body)
    want_open = open_fence(shown) is not None
    core = shown[: len(shown) - blank_tail(shown)]
    while lines:
        if (open_fence(lines) is not None) != want_open:
            cut = next((k for k in range(len(lines) - 1, -1, -1)
                        if _bare(lines[k]) and (open_fence(lines[:k]) is not None) == want_open), None)
        else:
            cut = _empty_block_at_end(lines, core)
        if cut is None or not _after_the_file(lines, cut, core, prose):
            break
        del lines[cut:]
    del lines[len(lines) - max(0, blank_tail(lines) - blank_tail(shown)):]
    return len(body) - len(lines)


def wrapper_left(text: str, shown: str) -> bool:
    """Whether the cut text still ends in what `wrapper_lines` cuts when it can (a code block left open that the
    file does not have, or an empty block after its end): a fence of the model's own that it could not tell apart
    from the file, since the lines before it do not end as the file does."""
    lines, file = text.split("\n"), shown.split("\n")
    if open_fence(lines) is not None and open_fence(file) is None:
        return True
    return _empty_block_at_end(lines, file) is not None


def _empty_block_at_end(lines: list[str], file: list[str]) -> int | None:
    """Where an empty code block at the end of `lines` opens, when they end in more fence lines than `file`
    does, else None."""
    last = len(lines) - 1 - blank_tail(lines)
    if last > 0 and _bare(lines[last]) and _bare(lines[last - 1]) and _fence_tail(lines) > _fence_tail(file):
        return last - 1
    return None


def _fence_tail(lines: list[str]) -> int:
    """How many bare fence lines end `lines` (blank lines between them skipped)."""
    lines = [line for line in lines if line.strip()]
    n = 0
    while n < len(lines) and _bare(lines[-1 - n]):
        n += 1
    return n


def _after_the_file(lines: list[str], cut: int, core: list[str], prose: bool) -> bool:
    """Whether `cut` comes after the file's own last text line (blank and bare fence lines skipped), and no line
    after it is like that line, so an output that went astray earlier is never cut. In code a line like it
    before the cut will do: an output cut short there meets the whole-file check (`editor.wholefile`). Prose has
    none, so there the output before the cut must end as the file does (`_ends_as_the_file`)."""
    anchor = next((line for line in reversed(core) if _text(line)), None)
    if anchor is None:
        return True
    if any(_like(line, anchor) for line in lines[cut:]):
        return False
    if prose:
        return _ends_as_the_file(lines[:cut], core)
    return any(_like(line, anchor) for line in lines[:cut])


def _text(line: str) -> bool:
    return bool(line.strip()) and not _bare(line)


LIKE = 0.8  # how alike a line and the file's last line must be for one to be the other after a small edit


def _ratio(a: str, b: str) -> float:
    """difflib's similarity without its junk heuristic, which on lines of 200+ characters sinks a one-word edit's
    0.97 to 0.49, depending on the order of the two."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _like(line: str, anchor: str) -> bool:
    """The same line, or the line after a small edit."""
    return line == anchor or _ratio(line, anchor) >= LIKE


def _ends_as_the_file(before: list[str], core: list[str]) -> bool:
    """Whether the output's lines `before` a wrapper fence end where the prose file ends. Past the last text
    lines the two share (in order), the output must hold the file's last line, as it is or after a small edit:
    a line like it, no copy of another line of the file, and no more like any other of the file's lines left
    there (an edited line before it, the output then cut short, is more like that one). Lines after it are
    additions at the end; lines of the file before it the output left out or rewrote (an edit of the end).
    Any line like the file's last one anywhere before the fence used to do (session 25's review: 443 of 4,000
    cut-short outputs of real Markdown/reST files lost lines end to end, most after an earlier line such as
    `endif()` or a list item of the same shape)."""
    mine, own = [line for line in before if _text(line)], [line for line in core if _text(line)]
    blocks = difflib.SequenceMatcher(None, own, mine, autojunk=False).get_matching_blocks()
    last = next((b for b in reversed(blocks) if b.size), None)
    own_tail, my_tail = (own, mine) if last is None else (own[last.a + last.size:], mine[last.b + last.size:])
    if not own_tail:
        return True
    anchor, copies = own[-1], set(own[:-1])
    for line in reversed(my_tail):
        if line in copies or not _like(line, anchor):
            continue
        score = _ratio(line, anchor)
        return all(_ratio(line, other) < score for other in own_tail[:-1])  # a tie: another copy of that line
    return False


# The model speaking of its edit in the first person, in any file: "I renamed `palette` as asked.", "Here is ..."
FIRST_PERSON = re.compile(r"(?:I(?:'ve| have| also)?\s+(?:changed|renamed|updated|added|removed|fixed|replaced|made|"
                          r"moved|modified|corrected|kept|left|applied|edited|converted|refactored|deleted|inserted|"
                          r"wrapped)\b|Here(?:'s| is| are) the\b|"
                          r"[A-Z][^;{}=<>$|&\[\]#()\"]*\bas (?:requested|asked)\W*$)")
# ... and of "this change", "the changes": in a code file only, where a changelog's own sentence cannot be
ABOUT_THE_EDIT = re.compile(r"(?:This (?:change|edit|update|modification)s?|"
                            r"The (?:changes?|edits?|updated (?:file|code))|(?:No|All) other (?:changes|lines)|"
                            r"I hope|Let me know|Hope (?:this|it) helps|Changes made|\**Explanation\b|"
                            r"\**Summary of (?:the )?changes)\b|Note:\s")
# A line of English, not code: a capitalised word, three more, a full stop; none of code's own punctuation
SENTENCE = re.compile(r"[A-Z][a-z']*(?:\s+[\w`'\",()/-]+){3,}[.!]")
COMMENT = re.compile(r"\s*(?:#|//|/\*|\*(?:\s|/|$)|--|;|%)")  # a comment line in code (not "**Explanation:**")
BULLET = re.compile(r"\s*(?:[-*]|\d+[.)])\s")  # an item of a list the model wrote under "Changes made:"
CODE_MARKS = re.compile(r"[;{}=<>$|&\\\[\]#]")
# The instruction asks for text at the end, which may read like the model's own words
AT_THE_END = re.compile(r"\bat the (?:end|bottom)\b|\bappend(?:s|ed|ing)?\b|\bend of (?:the )?file\b|\blast line\b",
                        re.I)


def trailing_chatter(text: str, shown: str, code: bool, instruction: str = "") -> str | None:
    """The first line of the run the output ends in, after the shown file's end, of lines that read as the model
    speaking of its edit; None when there is none. `wrapper_lines` cuts only from a fence line of the model's own;
    one that wrote the file, then "This change renames `palette` to `palette2`." and then its closing fence left
    that line in the file in every language but Python, which the parse check refuses (a generator over 100k
    real-file outputs, session 27: 100 % of such outputs in C, JS, Go, Rust, shell, TOML, YAML, Markdown and reST).
    In any file the model's first person counts ("I renamed", "Here is the", "as asked"); in a code file (`code`:
    a language known to be code) also "This change", "The changes" and any plain sentence at the start of a line,
    which no language there takes as code. A review found a changelog's "This version requires Rust 1.15." and a
    licence's sentence refused when they counted everywhere."""
    if AT_THE_END.search(instruction):
        return None
    new, old = text.split("\n"), shown.split("\n")
    new, old = new[:len(new) - blank_tail(new)], old[:len(old) - blank_tail(old)]
    ops = line_opcodes(old, new)
    if not ops or ops[-1][0] not in ("insert", "replace"):
        return None

    def chatter(line: str) -> bool:
        if code and COMMENT.match(line):
            return False  # a comment of the model's, however worded, breaks nothing
        plain = re.sub(r"`[^`]*`", "x", line.rstrip())  # code quoted in a sentence: `Option<i32>`
        return bool(FIRST_PERSON.match(line)) or (code and (bool(ABOUT_THE_EDIT.match(line)) or (
            bool(SENTENCE.fullmatch(plain)) and not CODE_MARKS.search(plain))))
    run = []
    for line in reversed(new[ops[-1][3]:ops[-1][4]]):  # the run the output ends in (its last line edited, then this)
        if line.strip() and not chatter(line) and not (code and BULLET.match(line)):
            break
        run.append(line)
    said = [line for line in reversed(run) if line.strip()]
    while said and not chatter(said[0]):  # list items count only under the model's own words ("Changes made:")
        said.pop(0)
    return said[0] if said else None


def finished_at_eos(output: str, shown: str) -> str | None:
    """The file an output the model ended with EOS and no closing fence holds, when it ends as the file does
    (with the blank lines the shown text had after that ending, which the model never got to write); None
    otherwise (the output is cut short, or cannot be told from one cut short).

    A file whose last line closes a code block ends with a bare fence line, and a small model takes that
    line for its closing fence and stops. The file is finished when the output holds at least as many code
    blocks as the file (an edit may add some), and its last block is the file's last block, line for line or
    edited in place (`_same_block`; a real probe: an Installation section with its block added above it): an
    output cut short can end at an earlier block's fence, or inside the last block at a line like its last one
    (`  }` above `}`), and text added at the end of the file (a section "at the end") may be inside that block or
    after it.

    Not taken: a short fence (three backticks for a prose file's four) after a last line the model rewrote.
    `wrapper_lines` cuts such a fence after a line like the file's own last one; any looser rule let outputs
    cut short pass for whole files (a review in session 25: one of every six cut points of 2,291 real
    Markdown/reST files, a bullet list's last item lost after the merge).
    """
    lines = output.split("\n")[:-1] if output.endswith("\n") else output.split("\n")
    file = shown.split("\n")[:-1] if shown.endswith("\n") else shown.split("\n")
    last = len(lines) - 1 - blank_tail(lines)
    if last < 0 or not _bare(lines[last]) or open_fence(lines) is not None or open_fence(file) is not None:
        return None
    mine, own = _last_block(lines), _last_block(file)
    if own is None or not _same_block(mine, own) or _blocks(lines) < _blocks(file):  # blocks the edit adds are its own
        return None
    return output + "\n" * max(0, blank_tail(file) - blank_tail(lines))


def _same_block(mine: list[str] | None, own: list[str]) -> bool:
    """Whether the output's last code block is the file's, line for line or edited in place: the same opening line,
    as many lines, most of them unchanged and the rest reworded (a probe, session 37: a README section ending in a
    js example whose comment the edit reworded was refused as maybe cut short). An output cut short inside it has
    fewer lines, or a blank one where the file's had text (the corpus test's 231,525 cut points)."""
    if mine is None or mine[0] != own[0] or len(mine) != len(own):
        return False
    changed = [(a.strip(), b.strip()) for a, b in zip(mine, own, strict=True) if a != b]
    return 2 * len(changed) < len(own) and all(a and b and _ratio(a, b) >= 0.6 for a, b in changed)


def _last_block(lines: list[str]) -> list[str] | None:
    """The lines of the last code block (opening and closing fence lines included) when the text's last
    non-blank line closes it, else None."""
    body = lines[:len(lines) - blank_tail(lines)]
    if not body or not _bare(body[-1]) or open_fence(body) is not None:
        return None
    opener = open_fence(body[:-1])
    return body[opener:] if opener is not None else None


def ends_in_a_block(text: str) -> bool:
    """Whether the text's last non-blank line closes a code block."""
    return _last_block(text.split("\n")) is not None


def _blocks(lines: list[str]) -> int:
    """How many fenced code blocks `lines` opens."""
    return sum(1 for k in range(len(lines)) if _fence(lines[k]) and open_fence(lines[:k + 1]) == k)


COPY_RULES = (
    "You are a precise code editor. You edit a file by writing an edit program, not the file itself. "
    "The program is a sequence of two operations:\n"
    '<copy lines="I-J"/> copies input lines I to J (inclusive) unchanged.\n'
    "<gen>TEXT</gen> writes new text (whole lines, each ending with a newline).\n"
    "Copy every line that does not change; write with <gen> only the lines you change or add; "
    "leave out lines you delete. Line ranges must increase through the file. "
    "Each input line is shown as its number, `|`, then the line; an empty line is shown empty, "
    "without its number."
)

EXAMPLE_FILE = (
    'def area(w, h):\n    """Area of a rectangle."""\n    return w + h\n\n\n'
    'def perimeter(w, h):\n    """Perimeter of a rectangle."""\n    return 2 * (w + h)\n'
)


def copy_header(path: str) -> str:
    """What the per-file part starts with, before the numbered lines."""
    return f"File: {path}\n"


def copy_example() -> str:
    """One complete worked example, on a file of its own.

    Measured with the untrained 1.5B model: a bare `1-2` example made it copy two lines per tag all the
    way down, and an example with placeholder text made it write that placeholder; a real file, a real
    instruction and the real program did neither.
    """
    return (
        f"Example. {copy_header('shapes.py')}{numbered(EXAMPLE_FILE)}Instruction: Fix the bug in area.\n"
        'Program: <copy lines="1-2"/><gen>    return w * h\n</gen><copy lines="4-8"/>\n'
        "One copy tag can copy any number of lines: use as few tags as possible."
    )


def line_number(k: int, line: str) -> str:
    """What the copy prompt puts before line `k` (`numbered`; `copykv` maps characters by it): `k|`, or
    nothing for an empty line."""
    return f"{k}|" if line.rstrip("\n") else ""


def numbered(file_text: str) -> str:
    """The file as the copy prompt shows it: `12|line`, numbers unpadded; an empty line stays empty,
    without its number (the next number says which it was).

    Why this form: measured with the Qwen tokenizer on the bench's 43 code cases, `12|line` is 1.37x
    the file's own tokens (the old right-aligned `  12| line` 1.43x) and 99 % of the tokens a copy
    feeds (the lines tokenized as one chunk) are the same tokens at the same characters here, so copy
    mode can take their cache entries from the prompt (`--copy-kv reuse`). A space or tab after the
    number (1.27x) merges with the line's first word (` def`, `\\tdef`): only 89 % would match. An empty
    line shown as `13|` cost its number and broke the newlines that a copy feeds as one token
    (`\\n\\n`) into others, so each blank line cut a reused run in two (on llama.cpp one more decode
    call per blank line); unnumbered, the held-out cases' whole-file copies go from 261 computed runs to
    23 and their prompts are 5 % shorter (`benchmarks/copy_prompt_tokens.py`).
    """
    lines = file_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "".join(f"{line_number(k, line)}{line}\n" for k, line in enumerate(lines, 1))


# The fixed part of every copy prompt (rules and worked example) is the system message, before the
# file: it is the same token prefix for every file, so an engine can read it once and keep its state.
COPY_SYSTEM = f"{COPY_RULES}\n\n{copy_example()}"


_SENTINEL = "@@EDITLLM-FILE@@"  # plain text: any renderer keeps it verbatim


def _copy_frame(tokenizer) -> tuple[str, str]:
    """The chat template's text around the user message: (prefix up to it, tail after it)."""
    messages = [{"role": "system", "content": COPY_SYSTEM}, {"role": "user", "content": _SENTINEL}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    head, tail = text.split(_SENTINEL)
    return head, tail


def copy_prefix(tokenizer) -> str:
    """The fixed text every copy prompt starts with (system rules and worked example, then the user
    turn's opening): a saved prompt state can hold it. Its tokens are a prefix of every copy prompt's
    tokens (it ends with the user turn's newline, and the file part starts a new word)."""
    return _copy_frame(tokenizer)[0]


def copy_user(path: str, file_text: str, instruction: str) -> str:
    """The per-file part: path, numbered lines, then the instruction (last: better for small models).
    No line count: the last number says it, and on short functions every token per call counts."""
    return f"{copy_header(path)}{numbered(file_text)}Instruction: {instruction.strip()}"


def copy_prompt(tokenizer, path: str, file_text: str, instruction: str) -> str:
    """Prompt for copy mode (and for training/, which must see exactly what the decoder sees):
    `copy_prefix(tokenizer)` + the file's part + the assistant turn's opening."""
    return copy_prompt_span(tokenizer, path, file_text, instruction)[0]


def copy_prompt_span(tokenizer, path: str, file_text: str, instruction: str) -> tuple[str, tuple[int, int]]:
    """`copy_prompt` and where its file's part is in it (`Prompt.user`: read as text, not as control tokens)."""
    head, tail = _copy_frame(tokenizer)
    user = copy_user(path, file_text, instruction)
    return head + user + tail, (len(head), len(head) + len(user))
