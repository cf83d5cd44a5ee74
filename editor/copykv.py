"""Copy without re-reading (`--copy-kv reuse`): which copied tokens can take the prompt's cache entries.

Copy mode's prompt shows every line as `12|line` (an empty line without its number), and a copy
appends lines I..J tokenized as one chunk. Nearly all of that chunk's tokens (99 % on the bench's
files, see `prompt.numbered`) are the very tokens the prompt holds at the same characters of the same
lines, so their keys and values exist already, at other positions: the engine copies them and rotates
the keys by the shift (`engine.Reuse`). A token that differs (one that would span a line's number) is
computed, and so are the last `tail` tokens of every copy: the model's choice after a copy comes from
computed rows that attend to it.

The issue's probe measured why this is an approximation: reused entries were computed in the prompt's
context, not the output's. Oracle programs resolve to the exact text either way (the text comes from
the program); a model's choices can change, which is why `reread` stays the default until the trained
selector is measured with reuse (issue 22, last target).
"""

from __future__ import annotations

from editllm.editor.engine import Reuse
from editllm.editor.prompt import copy_header, copy_prefix, copy_prompt_span, line_number
from editllm.grammar.program import Copy
from editllm.grammar.tokens import chat_encoding, text_encoding

COPY_KV = ("reread", "reuse")
DEFAULT_TAIL = 4  # computed tokens at the end of each copy (the probe: T = 1, 4, 16; see README)


class PromptCopies:
    """Maps a copy's fed tokens to the prompt positions that hold the same tokens."""

    def __init__(self, tokenizer, path: str, text: str, instruction: str, lines: list[str],
                 prompt_ids: list[int], tail: int = DEFAULT_TAIL) -> None:
        self.tokenizer = tokenizer
        self.lines = lines
        self.tail = max(1, tail)  # the copy's last token must be computed: its row is kept
        ids, offsets = chat_encoding(tokenizer, *copy_prompt_span(tokenizer, path, text, instruction))
        # Only when the ids the decoder reads are this prompt's (the caller may build its own)
        self.usable = ids == list(prompt_ids)
        self.at: dict[tuple[int, int], int] = {}  # (start, end) characters in the prompt -> token index
        for k, (a, b) in enumerate(offsets):
            self.at[(a, b)] = -1 if (a, b) in self.at else k  # -1: two tokens share the characters
        self.starts = [0]  # file offset of each line
        for line in lines:
            self.starts.append(self.starts[-1] + len(line))
        # prompt offset of each file character: after the header, each line after its `k|` (none on an
        # empty line, so a blank line's newline follows the line before it, as in the file)
        pos = len(copy_prefix(tokenizer)) + len(copy_header(path))
        self.shown: list[int] = []
        for k, line in enumerate(lines, 1):
            pos += len(line_number(k, line))
            self.shown.extend(range(pos, pos + len(line)))
            pos += len(line)
        self._spans: dict[tuple[int, int], list[tuple[int, int]]] = {}

    def offsets(self, copy: Copy) -> list[tuple[int, int]]:
        """Character offsets in the file of the copy's fed tokens (tokenized as the resolver does)."""
        key = (copy.i, copy.j)
        if key not in self._spans:
            text = "".join(self.lines[copy.i - 1:copy.j])
            enc = text_encoding(self.tokenizer, text)
            base = self.starts[copy.i - 1]
            self._spans[key] = [(a + base, b + base) for a, b in enc["offset_mapping"]]
        return self._spans[key]

    def source(self, start: int, end: int) -> int | None:
        """The prompt position whose token covers exactly file characters start..end-1, if any."""
        if end <= start or end > len(self.shown):
            return None
        a = self.shown[start]
        if self.shown[end - 1] - a != end - 1 - start:
            return None  # a token across a line end where the prompt has the next line's number
        k = self.at.get((a, a + end - start))
        return k if k is not None and k >= 0 else None

    def parts(self, copy: Copy, ids: list[int], prompt_ids: list[int]) -> list[int | Reuse]:
        """The copy's tokens as the engine gets them: runs of prompt entries to reuse, and computed ids."""
        if not self.usable:
            return list(ids)
        offsets = self.offsets(copy)
        if len(offsets) != len(ids):
            return list(ids)
        parts: list[int | Reuse] = []
        run: list[int] = []  # token indices of the current run
        src = -1

        def close() -> None:
            if run:
                parts.append(Reuse(src - len(run) + 1, tuple(ids[t] for t in run)))
                run.clear()

        for t, (a, b) in enumerate(offsets):
            k = self.source(a, b) if t < len(ids) - self.tail else None
            if k is not None and prompt_ids[k] == ids[t]:
                if run and k != src + 1:
                    close()
                run.append(t)
                src = k
                continue
            close()
            parts.append(ids[t])
        close()
        return parts
