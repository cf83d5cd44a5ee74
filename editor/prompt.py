"""Chat prompts for whole-file editing.

The file goes in a fenced block and the instruction after it (the 0.5B model did measurably better
with the instruction last); the assistant turn is prefilled with the opening fence so the first
output token is already file content. The fence is longer than any backtick run in the file, so a
line starting with it can only be the model closing the block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

SYSTEM = (
    "You are a precise code editor. You are given one file and an instruction. Apply exactly the "
    "change the instruction asks for and nothing else, then output the complete updated file."
)

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "tsx", ".jsx": "jsx", ".rs": "rust", ".go": "go", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php",
    ".sh": "bash", ".bash": "bash", ".md": "markdown", ".rst": "rst", ".toml": "toml", ".yaml": "yaml",
    ".yml": "yaml", ".json": "json", ".html": "html", ".css": "css", ".sql": "sql", ".txt": "text",
    ".cs": "csharp", ".swift": "swift", ".lua": "lua", ".r": "r", ".scala": "scala", ".tex": "latex",
}


def language(path: str) -> str:
    """The fence language tag for a path; empty when unknown."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower(), "")


def fence_for(text: str) -> str:
    """Three backticks, or one more than the longest backtick run in the file."""
    runs = [len(m) for m in re.findall(r"`{3,}", text)]
    return "`" * (max(runs) + 1 if runs else 3)


@dataclass(frozen=True)
class Layout:
    """How the rewrite prompt is laid out; the bench compares these (`--layout`)."""

    instruction_last: bool = True  # the instruction after the code (better for the 0.5B model)
    complete_wording: bool = True  # ask explicitly for every line of the file
    prefill_fence: bool = True  # the assistant turn starts with the opening fence
    system: bool = True  # our system prompt (else the model's default)


LAYOUTS = {
    "default": Layout(),
    "instruction-first": Layout(instruction_last=False),
    "no-complete-wording": Layout(complete_wording=False),
    "no-prefill": Layout(prefill_fence=False),
    "no-system": Layout(system=False),
}


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt and how to recognise the end of the model's file in its output."""

    text: str  # the full prompt (ending with the assistant's opening fence line when prefilled)
    fence: str  # the closing fence the output must end with
    file_text: str  # the file as shown to the model (LF endings)
    prefilled: bool = True  # False: the model must open the fenced block itself


def rewrite_prompt(tokenizer, path: str, file_text: str, instruction: str,
                   layout: Layout = LAYOUTS["default"]) -> Prompt:
    """Prompt for rewrite and spec modes: the model writes the whole file back."""
    fence = fence_for(file_text)
    lang = language(path)
    body = file_text if file_text.endswith("\n") or not file_text else file_text + "\n"
    code = f"File: {path}\n\n{fence}{lang}\n{body}{fence}\n\n"
    ask = f"Instruction: {instruction.strip()}\n\n"
    tail = ("Output the complete updated file in one fenced code block: every line, changed or not. "
            "Change only what the instruction asks for.") if layout.complete_wording else \
        "Output the updated file in a fenced code block."
    user = code + ask + tail if layout.instruction_last else ask + code + tail
    messages = [{"role": "user", "content": user}]
    if layout.system:
        messages.insert(0, {"role": "system", "content": SYSTEM})
    head = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if layout.prefill_fence:
        return Prompt(text=f"{head}{fence}{lang}\n", fence=fence, file_text=file_text)
    return Prompt(text=head, fence=fence, file_text=file_text, prefilled=False)


def strip_opening_fence(output: str, fence: str) -> str | None:
    """Without a prefilled fence the model opens the block itself (after any prose): drop up to it."""
    m = re.search(rf"(?m)^{re.escape(fence)}[^\n`]*\n", output)
    return None if m is None else output[m.end():]


def end_of_file(output: str, fence: str) -> int | None:
    """Index where the file ends in `output` (just after the newline before the closing fence).

    None while the fence has not appeared. The fence must begin a line; an output that starts with
    it is an empty file.
    """
    if output.startswith(fence):
        return 0
    idx = output.find("\n" + fence)
    return None if idx < 0 else idx + 1


COPY_SYSTEM = (
    "You are a precise code editor. You edit a file by writing an edit program, not the file itself. "
    "The program is a sequence of two operations:\n"
    '<copy lines="I-J"/> copies input lines I to J (inclusive) unchanged.\n'
    "<gen>TEXT</gen> writes new text (whole lines, each ending with a newline).\n"
    "Copy every line that does not change; write with <gen> only the lines you change or add; "
    "leave out lines you delete. Line ranges must increase through the file."
)

EXAMPLE_FILE = (
    'def area(w, h):\n    """Area of a rectangle."""\n    return w + h\n\n\n'
    'def perimeter(w, h):\n    """Perimeter of a rectangle."""\n    return 2 * (w + h)\n'
)


def copy_example() -> str:
    """One complete worked example, on a file of its own.

    Measured with the untrained 1.5B model: a bare `1-2` example made it copy two lines per tag all the
    way down, and an example with placeholder text made it write that placeholder; a real file, a real
    instruction and the real program did neither.
    """
    return (
        f"Example. File (8 lines):\n{numbered(EXAMPLE_FILE)}Instruction: Fix the bug in area.\n"
        'Program: <copy lines="1-2"/><gen>    return w * h\n</gen><copy lines="4-8"/>\n'
        "One copy tag can copy any number of lines: use as few tags as possible."
    )


def numbered(file_text: str) -> str:
    """The file with right-aligned line numbers, as the copy prompt shows it."""
    lines = file_text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(str(max(1, len(lines))))
    return "".join(f"{k:>{width}}| {line}\n" for k, line in enumerate(lines, 1))


def copy_prompt(tokenizer, path: str, file_text: str, instruction: str) -> str:
    """Prompt for copy mode (and for training/, which must see exactly what the decoder sees)."""
    n = len(file_text.split("\n")) - (1 if file_text.endswith("\n") or not file_text else 0)
    user = (
        f"File: {path} ({n} lines)\n\n{numbered(file_text)}\n"
        f"Instruction: {instruction.strip()}\n\n{copy_example()}\n\nNow write the edit program for {path}."
    )
    messages = [{"role": "system", "content": COPY_SYSTEM}, {"role": "user", "content": user}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
