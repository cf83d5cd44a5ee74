"""Bench cases: the JSONL task files (`benchmarks/cases/`) read into `Case` objects.

Kept apart from the runner so that code which only needs the cases (training's evaluation, the
CLI's argument checks) does not load torch or the decoding stack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from editllm.editor.errors import EditError, describe_json

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
    take `limit` spread evenly over file sizes.

    Every line is checked before any model loads, so a damaged case file is one line naming its file and
    line, not a crash minutes into a run. A file named twice is read once; a case id seen twice is refused,
    since records, `--reuse` and the report's tables are keyed by it."""
    cases: list[Case] = []
    seen: dict[str, str] = {}  # case id -> where it was first read
    for path in unique_paths(paths):
        for n, line in enumerate(_lines(path), 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                d = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EditError(f"{where}: not a bench case (not JSON: {exc})") from exc
            case = parse_case(d, where)
            if case.id in seen:
                raise EditError(f"{where}: case id {case.id!r} repeats the case of {seen[case.id]}")
            seen[case.id] = where
            cases.append(case)
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


def unique_paths(paths: list[Path]) -> list[Path]:
    """`paths` less the repeats of a file (`--cases f --cases f`, or `f` and `./f`), first one kept."""
    firsts: dict[Path, Path] = {}
    for p in paths:
        firsts.setdefault(Path(p).resolve(), Path(p))
    return list(firsts.values())


def _lines(path: Path) -> list[str]:
    """The file's lines as UTF-8 text; bytes that are not UTF-8 are refused with their line number."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise EditError(f"{path}:{line}: not a bench case (not UTF-8 text)") from exc


def parse_case(d: object, where: str) -> Case:
    """One case file line's object as a `Case`, its fields' types checked: a wrong one (`"before": 5`,
    `"tests": "x"`) would otherwise fail deep in a mode's run, after the model loaded."""
    if not isinstance(d, dict):
        raise EditError(f"{where}: not a bench case (a JSON object expected, not {describe_json(d)})")

    def field_of(key: str, kinds: tuple[type, ...], what: str, default: object = ...) -> object:
        if key not in d:
            if default is ...:
                raise EditError(f"{where}: not a bench case (no `{key}`)")
            return default
        value = d[key]
        if not isinstance(value, kinds):
            raise EditError(f"{where}: not a bench case (`{key}` must be {what}, not {describe_json(value)})")
        return value

    text = (str,)
    tests = field_of("tests", (list, type(None)), "a list of tests", None) or []
    for t in tests:
        if not (isinstance(t, dict) and isinstance(t.get("test"), str) and isinstance(t.get("entry_point"), str)):
            raise EditError(f"{where}: not a bench case (each of `tests` must be an object with the strings "
                            "`test` and `entry_point`)")
    edits = field_of("edits", (list, type(None)), "a list of edits", None)
    for e in edits or []:
        if not (isinstance(e, dict) and isinstance(e.get("line"), int) and isinstance(e.get("after"), str)):
            raise EditError(f"{where}: not a bench case (each of `edits` must be an object with a number `line` "
                            "and a string `after`)")
    return Case(field_of("id", text, "a string"), field_of("path", text, "a string"),
                field_of("instruction", text, "a string"), field_of("before", text, "a string"),
                field_of("after", (str, type(None)), "a string or null", None), tests,
                field_of("kind", text, "a string", "edit"), edits, bool(d.get("heldout")))
