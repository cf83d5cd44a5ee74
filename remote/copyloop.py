"""The one place the server backend touches copy mode's internals (editor.copymode): the prompt's token ids,
the resolver over the file, the stats record and the failure type. Copy mode's prompt is changing (its
numbering, its focus); going through `copy_parts` keeps the server loop on whatever local copy mode uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from editllm.editor.copymode import CopyStats, ProgramFailed, copy_prompt_ids
from editllm.resolver.resolve import Resolver

__all__ = ["ProgramFailed", "RemoteCopyStats", "copy_parts", "fresh_stats"]


@dataclass
class RemoteCopyStats(CopyStats):
    """Copy mode's stats plus the server's part (which server, how many requests)."""

    server: str = ""
    speculative: str | None = None
    requests: int = 0
    cuts: int = 0  # answers cut where the model left the tokens copy mode forces (the client appended them)

    def follow(self, earlier: CopyStats, again: bool = True) -> None:
        super().follow(earlier, again)
        self.requests += getattr(earlier, "requests", 0)
        self.cuts += getattr(earlier, "cuts", 0)


def copy_parts(lm, path: str, text: str, lines: list[str], instruction: str
               ) -> tuple[list[int], Resolver, RemoteCopyStats]:
    """Local copy mode's prompt ids for the text it shows (the file or its focus, `edit.copy_shown`), its
    resolver (the copied lines' token ids) and empty stats."""
    prompt = copy_prompt_ids(lm, path, text, instruction)
    return prompt, Resolver(lm.tokenizer, text, lines), fresh_stats(lm, prompt)


def fresh_stats(lm, prompt: list[int]) -> RemoteCopyStats:
    """Empty stats for one ask of a copy program on `prompt`."""
    return RemoteCopyStats(mode="copy", prompt_tokens=len(prompt), server=lm.info.url,
                           speculative=lm.info.speculative)
