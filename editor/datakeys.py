"""Keys a data file's edit (JSON, TOML, YAML) leaves out that the instruction does not speak of: a note.

The whole-file checks read a file's top-level blocks, and a JSON file is one block: a key deleted inside it is a
line of a block that may shrink in an edit. A real-model probe (session 29) asked to "remove the directories field
and move the keywords array right after description" of a package.json; the model also dropped `author` and
`license`, exit 0, and no check spoke. A data file says exactly what it holds, so the edit is read key by key: a
key (at any depth) the edited file no longer has, when neither it nor a key above it is named by the instruction,
is noted. Noted, not refused: a review (session 29) found 29 valid edits a refusal would stop (migrations, "replace
jest with vitest" taking `@types/jest`, "use the short form for each dependency", a typo fixed in a key), which key
names alone cannot tell from a loss. Keys moved, reordered, made inline tables or flow mappings are kept; a key
whose value the edit writes under another name (a table, a list or a long string) was renamed or moved; the
items of a list are not keys (a step removed from a workflow is left to the other checks).
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from editllm.editor.errors import EditError, few
from editllm.editor.languages import language
from editllm.editor.syntax import JSONC_NAME, jsonc_to_json

DATA = ("json", "toml", "yaml")


def _read(tag: str, text: str, path: str) -> Any:
    """The data a file holds, or None where it does not read (the syntax check speaks of that). Every key is a
    string, as JSON and TOML write them and YAML's BaseLoader reads them."""
    try:
        if tag == "json":
            return json.loads(jsonc_to_json(text) if JSONC_NAME.search(path) else text)
        if tag == "toml":
            return tomllib.loads(text)
        import yaml

        # keys as written (`on:` is "on", not True), read by libyaml where PyYAML has it (10x the pure-Python reader)
        return list(yaml.load_all(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader)))
    except Exception:  # noqa: BLE001 - any reader's error means: not judged here
        return None


def key_paths(data: Any, above: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key's path (`("scripts", "test")`), not within a list: an item taken out takes its keys with it
    ("remove the `Check formatting` step" of a workflow, a task of an Ansible play), and which item a key was in
    is not read here."""
    found: set[tuple[str, ...]] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "<<":  # YAML's merge key, read as written: an anchor inlined loses it, and nothing else
                continue
            path = (*above, key)
            found.add(path)
            found |= key_paths(value, path)
    return found


def _canonical(value: Any) -> str | None:
    """A value as one string, when it says enough to be recognised elsewhere: a table, a list, or a string of eight
    characters or more (not `true`, `1`, `"dev"`)."""
    if isinstance(value, dict | list) and value or isinstance(value, str) and len(value) >= 8:
        return json.dumps(value, sort_keys=True, default=str)  # default: TOML's dates
    return None


def _values(data: Any) -> set[str]:
    """The canonical form of every value the data holds (tables, lists and their items, long strings)."""
    found: set[str] = set()
    items = data if isinstance(data, list) else [data]
    while items:
        value = items.pop()
        if (text := _canonical(value)) is not None:
            found.add(text)
        items.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else [])
    return found


def _at(data: Any, path: tuple[str, ...], tag: str) -> Any:
    """The value at a key path (in any document of a YAML stream)."""
    for document in data if tag == "yaml" else [data]:
        value = document
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


COMMON = {"the", "and", "add", "remove", "move", "keep", "make", "use", "set", "key", "keys", "field", "value",
          "file", "with", "from", "into", "for", "this", "that", "all", "new", "old"}  # words that name no key


def _flat(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def named(key: str, instruction: str, words: list[str] | None = None) -> bool:
    """Whether the instruction names a key: as a word, or, for a key of three letters or more, as letters of it
    written apart (`devDependencies` in "the dev dependencies", `line-length` in "the line length"), or by a word of
    it (`ts-jest` in "replace jest with vitest", `editor.tabSize` in "remove tabSize", `keywords` in "keyword")."""
    if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", instruction, re.I):
        return True
    flat = _flat(key)
    if len(flat) >= 3 and flat in _flat(instruction):
        return True
    words = re.findall(r"[A-Za-z][\w-]*", instruction) if words is None else words
    return any(len(_flat(word)) >= 3 and (_flat(word) in flat or flat.startswith(_flat(word)[:-1]) and
                                          len(flat) - len(_flat(word)) <= 2) for word in words
               if _flat(word) not in COMMON)


def _both(path: str, old_text: str, new_text: str) -> tuple[str, Any, Any, set, set] | None:
    """(tag, old data, new data, old key paths, new key paths) of a data file's edit; None for other files, no
    change, or texts that do not read. Every document of a YAML stream counts."""
    tag = language(path)
    if tag not in DATA or old_text == new_text:
        return None
    old, new = _read(tag, old_text, path), _read(tag, new_text, path)
    if old is None or new is None:
        return None
    documents = (lambda data: data) if tag == "yaml" else (lambda data: [data])
    return (tag, old, new, set().union(*(key_paths(doc) for doc in documents(old))),
            set().union(*(key_paths(doc) for doc in documents(new))))


def unasked_keys(path: str, old_text: str, new_text: str, instruction: str) -> list[str]:
    """The keys (dotted paths) of a data file the edit leaves out that the instruction does not speak of (see the
    module's docstring); [] for other files or texts that do not read."""
    read = _both(path, old_text, new_text)
    if read is None:
        return []
    tag, old, new, had, kept = read
    if tag == "yaml" and REMOVING.search(instruction):
        had = set().union(set(), *(key_paths(doc) for doc in _kept_documents(old, new, instruction)))
    gone = sorted(p for p in had - kept if p[:-1] in kept or len(p) == 1)  # the highest key gone
    moved = _values(new)
    words = [w for w in re.findall(r"[A-Za-z][\w-]*", instruction) if len(w) >= 3]

    def asked(p: tuple) -> bool:  # the key named, or a parent named for all it holds ("remove the devDependencies",
        # "only run CI on pushes"), not one of whose keys the instruction names and takes away ("move eslint from
        # devDependencies to dependencies": a probe, session 40, had `@types/react` dropped beside it, no note)
        return named(p[-1], instruction, words) or any(
            named(p[k], instruction, words) and not any(len(q) > k + 1 and q[:k + 1] == p[:k + 1] and q not in kept
                                                         and named(q[k + 1], instruction, words) for q in had)
            for k in range(len(p) - 1))
    return [".".join(p) for p in gone if not asked(p) and _canonical(_at(old, p, tag)) not in moved]


REMOVING = re.compile(r"\b(?:remov|delet|drop|get rid of|eliminat)\w*", re.I)


def _kept_documents(old: list[Any], new: list[Any], instruction: str) -> list[Any]:
    """The documents of a YAML stream an edit that asks for something to go did not take out whole: a probe (session
    36) asked a Kubernetes manifest to "Remove the Service.", and the keys of the document it took out were noted
    one by one as left out unasked. Taken out: a document with no equal in the output, when as many lack one as
    the stream lost; else those of them with a word of the instruction among their values (`kind: Service`)."""
    dropped = len(old) - len(new)
    if dropped <= 0:
        return old
    written = {json.dumps(doc, sort_keys=True, default=str) for doc in new}
    unmatched = [k for k, doc in enumerate(old) if json.dumps(doc, sort_keys=True, default=str) not in written]
    if len(unmatched) != dropped:
        words = {w.lower() for w in re.findall(r"[A-Za-z][\w-]{2,}", instruction)}
        unmatched = [k for k in unmatched if words & {str(v).lower() for v in _scalars(old[k])}]
    return old if len(unmatched) != dropped else [doc for k, doc in enumerate(old) if k not in unmatched]


def _scalars(data: Any) -> list[Any]:
    """Every scalar value the data holds (`Service`, `api`, `80`)."""
    if isinstance(data, dict):
        return [v for value in data.values() for v in _scalars(value)]
    if isinstance(data, list):
        return [v for value in data for v in _scalars(value)]
    return [data]


def unasked_keys_note(path: str, keys: list[str]) -> str:
    """The note for keys an edit of a data file leaves out unasked."""
    return f"{path}: note: the edit leaves out {few(keys)}, which the instruction does not name; check they should go"


# Words that ask for a key to go elsewhere in the tree
MOVING = re.compile(r"\b(?:mov\w*|nest\w*|un-?nest\w*|indent\w*|dedent\w*|relocat\w*|hoist\w*|flatten\w*|"
                    r"restructur\w*|reorganis\w*|reorganiz\w*|top[- ]level)\b", re.I)


def moved_keys(path: str, old_text: str, new_text: str, instruction: str) -> list[tuple[str, str]]:
    """(old key path, new key path) for each key of a data file the edit puts under another parent (the highest of
    a moved subtree), unless the instruction speaks of moving or nesting; [] for other files and texts that do not
    read. A real-model probe (session 34): asked to add one variable to a workflow job's `env`, the model wrote the
    job two spaces shallower, and the merged file parsed, with the job a top-level key outside `jobs:`, which no
    runner reads, exit 0. Indentation is structure in YAML, so a line written at another depth is a move."""
    read = None if MOVING.search(instruction) else _both(path, old_text, new_text)
    if read is None:
        return []
    tag, old, new, had, has = read
    gone, came = had - has, has - had
    out = []
    for was in sorted(gone, key=len):
        if any(was[:k] in gone for k in range(1, len(was))) or was[-1] in ("<<",):
            continue  # the highest key of a moved subtree speaks for it
        value = _canonical(_at(old, was, tag))
        to = [p for p in came if p[-1] == was[-1] and p[:-1] != was[:-1] and p[:-1] in has | {()}
              and (value is None or _canonical(_at(new, p, tag)) == value or len(p) != len(was))]
        if to and not any(p[:-1] == was[:-1] for p in came):
            out.append((".".join(was), ".".join(min(to, key=len)) or "the top level"))
    return out


def no_unasked_move(path: str, old_text: str, new_text: str, instruction: str) -> None:
    """Refuse an edit of a data file that puts a key under another parent unasked (`moved_keys`)."""
    if moved := moved_keys(path, old_text, new_text, instruction):
        was, to = moved[0]
        more = f" (and {len(moved) - 1} more)" if len(moved) > 1 else ""
        raise EditError(f"{path}: the edit moves {was} to {to}{more}, which the instruction does not ask (lines "
                        "written at another indentation?); nothing written")
