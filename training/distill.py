"""Self-distillation: rewrite mode's own edits of public files become copy-mode training examples.

The synthetic edits (`training/data.py`) have ground truth but only three narrow kinds. Users ask for
type hints, docstrings, renames, logging, error handling, argument changes, refactors, Markdown edits,
and describe bugs by what goes wrong. Rewrite mode can already do these; copy mode should write the
same edit in copy form. So: pick a public file (installed packages, the standard library, package
READMEs), pair it with a free-form instruction suited to it, run rewrite mode through the editor's
own pipeline, and keep the output only when it passes every check (complete file, non-empty diff,
parses, size, the task's own test). Each kept (before, after) becomes an oracle program.

Results stream to a `.jsonl(.gz)` file as they come, and every attempt (kept or not) is logged beside
it, so an interrupted run (a GPU lease ends) resumes where it stopped.
"""

from __future__ import annotations

import ast
import json
import random
import re
import sysconfig
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from editllm.editor.edit import EditOptions, edit_file
from editllm.editor.errors import EditError
from editllm.editor.models import LoadedModel
from editllm.editor.source import SourceFile, split_lines
from editllm.training import wording
from editllm.training.data import PACKAGES, Example, changed_share, open_text, public_sources, seal
from editllm.training.mutate import mutation_sites

Check = Callable[[str], str | None]  # the edited text -> None when it passes, else why not


@dataclass(frozen=True)
class Task:
    """One request to rewrite mode: the file it sees, the instruction, and the task's own test."""

    kind: str
    instruction: str
    before: str
    check: Check | None = None
    name: str = ""  # the function asked about (code kinds): with `original`, what rebuilds the check
    original: str = ""  # bug tasks: the file before the mutation, which the fix must restore

    def to_json(self) -> dict:
        """The task without its check (a closure): `Task.from_json` rebuilds it, so tasks drawn on one
        machine can be run on another (a lent GPU has other packages, and drawing takes minutes)."""
        return {"kind": self.kind, "instruction": self.instruction, "before": self.before, "name": self.name,
                "original": self.original}

    @staticmethod
    def from_json(d: dict) -> Task:
        if d["kind"] == "bug":
            check = fixed_check(d["original"])
        elif d["kind"] in TEMPLATES and d["kind"] != "prose":
            check = task_check(d["kind"], d["before"], d["name"])
        else:
            check = None
        return Task(d["kind"], d["instruction"], d["before"], check, d["name"], d["original"])


# --- instructions suited to a file ---------------------------------------------------------------------

TEMPLATES = {
    "type_hints": ["Add type hints to {f}.", "Annotate the parameters and the return type of {f}.",
                   "Please add type annotations to the signature of {f}."],
    "docstring": ["Add a docstring to {f}.", "Document {f} with a short docstring that says what it does.",
                  "Write a docstring for {f} describing its arguments and what it returns."],
    "rename": ["Give {f} a more descriptive name and update every call site.",
               "Rename {f} to something clearer, and fix its callers too.",
               "The name {f} is unclear; rename it (and its uses) to say what it does."],
    "logging": ["Add logging to {f}: log at debug level what it is called with and what it returns.",
                "Use the `logging` module to log what {f} does, with a module-level logger.",
                "Add a debug log message at the start of {f}."],
    "error_handling": ["Validate the arguments of {f} and raise a ValueError with a helpful message when "
                       "they are invalid.", "Add error handling to {f}.",
                       "Make {f} fail with a clear error message on bad input instead of crashing later."],
    "argument": ["Add an optional keyword argument `verbose` to {f} (default False); when it is true, print "
                 "what the function does.", "Make every parameter of {f} after the first keyword-only.",
                 "Give {f} a `strict` parameter that defaults to False and raises on anything unexpected "
                 "when True."],
    "refactor": ["Simplify {f} without changing its behaviour.", "Refactor {f} to make it easier to read.",
                 "Clean up {f}: shorter, clearer, same behaviour."],
    "prose": ["Fix the spelling and grammar mistakes.", "Make the first paragraph shorter and clearer.",
              "Use sentence case for every heading.", "Turn the first bullet list into a numbered list.",
              "Add a short \"Contributing\" section at the end.", "Rewrite the introduction in a friendlier tone."],
}
CODE_KINDS = ["type_hints", "docstring", "rename", "logging", "error_handling", "argument", "refactor", "bug"]


def _defs(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and not n.name.startswith("__")
            and n.end_lineno - n.lineno >= 2]


def _find(text: str, name: str) -> list[ast.FunctionDef]:
    try:
        return [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == name]
    except SyntaxError:
        return []


def _params(fn: ast.FunctionDef) -> list[ast.arg]:
    a = fn.args
    return [x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]


def _annotated(fn: ast.FunctionDef) -> bool:
    return fn.returns is not None or any(x.annotation is not None for x in _params(fn))


def _has_docstring(fn: ast.FunctionDef) -> bool:
    return ast.get_docstring(fn) is not None


def _calls(tree: ast.AST, name: str) -> int:
    return sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name for n in ast.walk(tree))


def _count(text: str, name: str, node_type: type) -> int:
    """How many `node_type` nodes the functions called `name` hold."""
    return sum(isinstance(n, node_type) for fn in _find(text, name) for n in ast.walk(fn))


def python_tasks(text: str, rng: random.Random) -> list[Task]:
    """One candidate task per code kind that fits the file, each on a function drawn at random."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    names = [f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    funcs = [f for f in _defs(tree) if names.count(f.name) == 1]  # a check must find the one function asked
    if not funcs:
        return []
    top = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    pick = {
        "type_hints": [f for f in funcs if _params(f) and not _annotated(f)],
        "docstring": [f for f in funcs if not _has_docstring(f)],
        "rename": [f for f in top if _calls(tree, f.name) and sum(g.name == f.name for g in funcs) == 1],
        "logging": [f for f in funcs if f.end_lineno - f.lineno >= 4],
        "error_handling": [f for f in funcs if _params(f)],
        "argument": [f for f in top if _params(f)],
        "refactor": [f for f in funcs if f.end_lineno - f.lineno >= 6],
    }
    tasks = []
    for kind, candidates in pick.items():
        if candidates:
            fn = rng.choice(candidates)
            tasks.append(Task(kind, rng.choice(TEMPLATES[kind]).format(f=f"`{fn.name}`"), text,
                              task_check(kind, text, fn.name), fn.name))
    bug = bug_task(text, funcs, rng)
    if bug:
        tasks.append(bug)
    return tasks


def task_check(kind: str, before: str, name: str) -> Check | None:
    """The task's own test: did the edit do the kind of thing asked, to the function asked?"""
    def one(after: str) -> ast.FunctionDef | None:
        found = _find(after, name)
        return found[0] if len(found) == 1 else None

    if kind == "type_hints":
        return lambda after: None if (f := one(after)) and _annotated(f) else f"`{name}` has no annotations"
    if kind == "docstring":
        return lambda after: None if (f := one(after)) and _has_docstring(f) else f"`{name}` has no docstring"
    if kind == "rename":
        calls = _calls(ast.parse(before), name)

        def renamed(after: str) -> str | None:
            tree = ast.parse(after)
            if _find(after, name) or _calls(tree, name):
                return f"`{name}` is still defined or called"
            new = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)} - \
                {f.name for f in ast.walk(ast.parse(before)) if isinstance(f, ast.FunctionDef)}
            return None if len(new) == 1 and _calls(tree, new.pop()) == calls else "call sites not all renamed"
        return renamed
    if kind == "logging":
        return lambda after: None if after.count("log") > before.count("log") else "no logging added"
    if kind == "error_handling":
        had = _count(before, name, ast.Raise) + _count(before, name, ast.Try)
        return lambda after: None if _count(after, name, ast.Raise) + _count(after, name, ast.Try) > had \
            else "no raise or try added"
    if kind == "argument":
        sig = ast.dump(_find(before, name)[0].args)
        return lambda after: None if (f := one(after)) and ast.dump(f.args) != sig else "signature unchanged"
    return None  # refactor: the generic checks only


def bug_task(text: str, funcs: list[ast.FunctionDef], rng: random.Random) -> Task | None:
    """A mutation described by its symptom (or not at all); the test: the fix restores the original."""
    rng.shuffle(funcs := list(funcs))
    for fn in funcs:
        sites = mutation_sites(text, fn)
        if sites:
            m = rng.choice(sites)
            return Task("bug", wording.bugfix([fn.name], [m.kind], rng), m.apply(text), fixed_check(text),
                        fn.name, text)
    return None


def fixed_check(original: str) -> Check:
    """A bug task's test: the edited file's AST is the original's."""
    want = ast.dump(ast.parse(original))
    return lambda after: None if ast.dump(ast.parse(after)) == want else "bug not fixed exactly"


def prose_tasks(text: str, rng: random.Random, k: int = 3) -> list[Task]:
    """`k` different requests for one README: there are far fewer READMEs than Python files."""
    return [Task("prose", instruction, text) for instruction in rng.sample(TEMPLATES["prose"], k)]


# --- public files ------------------------------------------------------------------------------------

def prose_sources(lines: tuple[int, int] = (15, 300), max_bytes: int = 12_000) -> list[tuple[str, str]]:
    """(label, Markdown) of installed packages' long descriptions (their README, in the wheel's
    METADATA, when it says `text/markdown`), sorted for determinism."""
    out = []
    for meta in sorted(Path(sysconfig.get_paths()["purelib"]).glob("*.dist-info/METADATA")):
        try:
            head, _, body = meta.read_text(encoding="utf-8").partition("\n\n")
        except (OSError, UnicodeDecodeError):
            continue
        small = len(body.encode()) <= max_bytes and lines[0] <= body.count("\n") <= lines[1]
        if "text/markdown" in head and small:
            out.append((f"{meta.parent.name.split('-')[0]}/README.md", body))
    return out


def candidates(seed: int, packages: list[str] | None = None) -> Iterator[tuple[str, str, Task]]:
    """(label, path, task) in a seeded order: Python files and READMEs, every suitable task of each."""
    rng = random.Random(seed)
    pool = public_sources(packages or PACKAGES) + prose_sources()
    rng.shuffle(pool)
    for label, text in pool:
        tasks = prose_tasks(text, rng) if label.endswith(".md") else python_tasks(text, rng)
        for task in tasks:
            yield label, Path(label).name, task


# --- running rewrite mode and keeping what passes -------------------------------------------------------

def judge(task: Task, path: str, result_text: str, complete: bool, merged: bool,
          max_changed: float = 0.5) -> str | None:
    """Why rewrite mode's output is not training material, or None when it passes every check."""
    if not complete or merged:
        return "fragment"
    if result_text == task.before:
        return "empty diff"
    if path.endswith(".py"):
        try:
            ast.parse(result_text)
        except SyntaxError:
            return "does not parse"
    if len(result_text) > 2 * len(task.before) + 2000 or \
            len(split_lines(result_text)) < len(split_lines(task.before)) // 2:
        return "size"
    if changed_share(task.before, result_text) > max_changed:
        return "rewrote too much"
    return task.check(result_text) if task.check else None


def rewrite(lm: LoadedModel, path: str, text: str, instruction: str, opts: EditOptions) -> tuple[str, bool, bool]:
    """The one call into the editor: (LF text, whole file written, fragment merged)."""
    result = edit_file(lm, SourceFile(path, text), instruction, opts)
    return result.new_text.replace("\r\n", "\n"), result.complete_output, result.merged


class _Prompted(Exception):
    """Raised by `prompt_of`'s stand-in decoder: the pipeline got as far as the prompt."""

    def __init__(self, ids: list[int], max_new: int):
        super().__init__("prompt recorded")
        self.ids, self.max_new = ids, max_new


def prompt_of(lm: LoadedModel, path: str, task: Task, opts: EditOptions) -> tuple[list[int], int] | None:
    """The prompt ids and token budget rewrite mode would decode for `task` through the editor's own
    pipeline (focus included), or None when the pipeline refuses it first (too long for the context).
    A lent GPU decodes these in batches (`training.lease`) and `replay` hands the outputs back to the
    same pipeline, so the kept examples are what `distill` would keep, only found many at a time."""
    def record(lm, ids, max_new, stop):
        raise _Prompted(list(ids), max_new)

    try:
        edit_file(lm, SourceFile(path, task.before), task.instruction, replace(opts, generate=record))
    except _Prompted as got:
        return got.ids, got.max_new
    except EditError:
        return None
    return None


def replay(outputs: dict[tuple[int, ...], tuple[list[int], str]]):
    """A decoding loop (`EditOptions.generate`) that answers each prompt with its output decoded ahead:
    (output ids without the end token, "eos" or "max_new_tokens"). A prompt decoded nowhere is an
    EditError, logged as that attempt's outcome."""
    from editllm.editor.decode import DecodeStats

    def generate(lm, ids, max_new, stop):
        found = outputs.get(tuple(ids))
        if found is None:
            raise EditError("not decoded in the batch")
        out, reason = found
        return list(out[:max_new]), DecodeStats("rewrite", prompt_tokens=len(ids), output_tokens=len(out),
                                                 stop_reason=reason)
    return generate


def distill(lm: LoadedModel, n: int, out: Path, seed: int = 0, packages: list[str] | None = None,
            opts: EditOptions | None = None, max_attempts: int | None = None,
            tasks: Iterable[tuple[str, str, Task]] | None = None,
            on_attempt: Callable[[str, str | None], None] | None = None, deadline: float | None = None) -> Counter:
    """Append kept examples (with copy prompts) to `out` until it holds `n`, resuming from its attempt log
    `<out>.attempts`; returns the outcome counts of this call ("kept" or each rejection reason).

    `tasks` defaults to `candidates(seed, packages)`, the public files. `deadline` (`time.time()`): no task
    is begun after it."""
    from editllm.editor.prompt import copy_prompt

    opts = opts or EditOptions(mode="rewrite")
    log_path = out.with_name(out.name + ".attempts")
    done = set()
    kept = 0
    if log_path.exists():
        for line in log_path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            done.add(entry["key"])
            kept += entry["outcome"] == "kept"
    outcomes: Counter = Counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    seal(out)  # a run killed mid-stream (a lease's end) left it without its end
    attempts = 0
    with open_text(out, "a") as sink, open(log_path, "a", encoding="utf-8") as log:
        for label, path, task in tasks if tasks is not None else candidates(seed, packages):
            if kept >= n or (max_attempts is not None and attempts >= max_attempts):
                break
            if deadline is not None and time.time() >= deadline:
                break
            key = f"{label}|{task.kind}|{task.instruction}"
            if key in done:
                continue
            attempts += 1
            try:
                text, complete, merged = rewrite(lm, path, task.before, task.instruction, opts)
                reason = judge(task, path, text, complete, merged)
            except EditError as exc:
                reason, text = "edit error: " + re.sub(r"\d+", "N", str(exc).split(": ", 1)[-1])[:48], ""
            ex = None
            if reason is None:
                ex = Example(path, task.instruction, task.before, text, f"distill:{task.kind}:{label}").finish()
                reason = None if ex else "no program"
            if ex:
                sink.write(json.dumps(asdict(ex) | {"prompt": copy_prompt(lm.tokenizer, path, ex.shown()[0],
                                                                           ex.instruction)}) + "\n")
                sink.flush()
                kept += 1
            outcome = reason or "kept"
            outcomes[outcome] += 1
            log.write(json.dumps({"key": key, "outcome": outcome}) + "\n")
            log.flush()
            if on_attempt:
                on_attempt(key, reason)
    return outcomes
