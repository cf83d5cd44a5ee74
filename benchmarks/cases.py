"""Bench cases: the JSONL task files (`benchmarks/cases/`) read into `Case` objects.

Kept apart from the runner so that code which only needs the cases (training's evaluation, the
CLI's argument checks) does not load torch or the decoding stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from editllm.editor.errors import EditError

CASES_DIR = Path(__file__).resolve().parent / "cases"


def default_cases() -> list[Path]:
    """The committed bench cases (`benchmarks/cases/*.jsonl`, installed with the package)."""
    return sorted(CASES_DIR.glob("*.jsonl")) if CASES_DIR.is_dir() else []


@dataclass
class Case:
    id: str
    path: str
    instruction: str
    before: str
    after: str | None = None
    tests: list[dict] = field(default_factory=list)
    kind: str = "edit"
    edits: list[dict] | None = None  # prose cases: the lines asked to change, scored by prose_metrics
    heldout: bool = False  # flagged `"heldout": true`: text no training generator may read

    @property
    def lines(self) -> int:
        return self.before.count("\n") + (0 if self.before.endswith("\n") or not self.before else 1)

    @property
    def group(self) -> str:
        """The report table the case belongs to: `code` or `prose` (a case that lists its `edits`), with
        `-heldout` for a held-out case (kind `heldout-*` or flagged), so that held-out numbers are never
        averaged with those of cases built like the training data."""
        held = self.heldout or self.kind.startswith("heldout")
        return ("prose" if self.edits is not None else "code") + ("-heldout" if held else "")


FAMILIES = ("prose",)  # a family name selects its kinds: `prose` → prose-typo, prose-link, prose-wording


def kind_selected(kind: str, wanted: list[str]) -> bool:
    """Whether a case of `kind` is asked for. Kinds match exactly (`bugfix` leaves out `bugfix-single`);
    a family name (`prose`) selects every `prose-*` kind."""
    return any(kind == w or (w in FAMILIES and kind.startswith(w + "-")) for w in wanted)


def load_cases(paths: list[Path], kinds: list[str] | None = None, limit: int | None = None,
               min_lines: int | None = None, max_lines: int | None = None) -> list[Case]:
    """Read JSONL cases; keep the given kinds (see `kind_selected`) and files of at least `min_lines` and at
    most `max_lines` lines (targets stated for "modules of 80+ lines" or "short functions" select with them);
    take `limit` spread evenly over file sizes."""
    cases = []
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                cases.append(Case(d["id"], d["path"], d["instruction"], d["before"], d.get("after"),
                                  d.get("tests") or [], d.get("kind", "edit"), d.get("edits"),
                                  bool(d.get("heldout"))))
            except (KeyError, json.JSONDecodeError) as exc:
                raise EditError(f"{path}:{n}: not a bench case ({exc})") from exc
    if kinds:
        cases = [c for c in cases if kind_selected(c.kind, kinds)]
    if min_lines is not None:
        cases = [c for c in cases if c.lines >= min_lines]
    if max_lines is not None:
        cases = [c for c in cases if c.lines <= max_lines]
    if limit is not None and limit < len(cases):
        by_size = sorted(cases, key=lambda c: c.lines)
        step = len(by_size) / limit
        cases = [by_size[int(i * step)] for i in range(limit)]
    return cases
