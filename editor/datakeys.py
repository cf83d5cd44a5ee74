"""A data file (JSON, TOML, YAML) keeps every key the instruction does not speak of.

The whole-file checks read a file's top-level blocks, and a JSON file is one block: a key deleted inside it is a
line of a block that may shrink in an edit. A real-model probe (session 29) asked to "remove the directories field
and move the keywords array right after description" of a package.json; the model also dropped `author` and
`license`, exit 0, and no check spoke. A data file says exactly what it holds, so the edit is read key by key: a
key (at any depth) the edited file no longer has, when neither it nor a key above it is named by the instruction,
was left out, and the edit is refused. Keys moved, reordered, made inline tables or flow mappings are kept; a key
whose value the edit writes under another name (a table, a list or a long string) was renamed or moved; the
items of a list are not keys (a step removed from a workflow is left to the other checks).
"""

from __future__ import annotations

import re
from typing import Any

from editllm.editor.errors import EditError
from editllm.editor.languages import language
from editllm.editor.syntax import JSONC_NAME, _jsonc

DATA = ("json", "toml", "yaml")


def _read(tag: str, text: str, path: str) -> Any:
    """The data a file holds, or None where it does not read (the syntax check speaks of that)."""
    try:
        if tag == "json":
            import json

            return json.loads(_jsonc(text) if JSONC_NAME.search(path) else text)
        if tag == "toml":
            import tomllib

            return tomllib.loads(text)
        import yaml

        return list(yaml.safe_load_all(text))  # a stream of documents
    except Exception:  # noqa: BLE001 - any reader's error means: not judged here
        return None


def key_paths(data: Any, above: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key's path (`("scripts", "test")`), not within a list: an item taken out takes its keys with it
    ("remove the `Check formatting` step" of a workflow, a task of an Ansible play), and which item a key was in
    is not read here."""
    found: set[tuple[str, ...]] = set()
    if isinstance(data, dict):
        for key, value in data.items():
            path = (*above, str(key))
            found.add(path)
            found |= key_paths(value, path)
    return found


def _canonical(value: Any) -> str | None:
    """A value as one string, when it says enough to be recognised elsewhere: a table, a list, or a string of eight
    characters or more (not `true`, `1`, `"dev"`)."""
    import json

    if isinstance(value, dict | list) and value or isinstance(value, str) and len(value) >= 8:
        return json.dumps(_plain(value), sort_keys=True, default=str)
    return None


def _plain(value: Any) -> Any:
    """A value with every key a string (YAML reads `on:` as True, `1:` as 1), to be written sorted."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, list) else value


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
            value = next((v for k, v in value.items() if str(k) == key), None) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def _flat(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def named(key: str, instruction: str) -> bool:
    """Whether the instruction names a key: as a word, or, for a key of three letters or more, as letters of it
    written apart (`devDependencies` in "the dev dependencies", `line-length` in "the line length")."""
    if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", instruction, re.I):
        return True
    return len(_flat(key)) >= 3 and _flat(key) in _flat(instruction)


def no_unasked_key_loss(path: str, old_text: str, new_text: str, instruction: str) -> None:
    """Refuse an edit of a data file that leaves out a key nobody asked about (see the module's docstring)."""
    tag = language(path)
    if tag not in DATA or old_text == new_text:
        return
    old, new = _read(tag, old_text, path), _read(tag, new_text, path)
    if old is None or new is None:
        return
    documents = (lambda data: data) if tag == "yaml" else (lambda data: [data])
    had = set().union(*(key_paths(doc) for doc in documents(old)))
    kept = set().union(*(key_paths(doc) for doc in documents(new)))
    gone = sorted(p for p in had - kept if p[:-1] in kept or len(p) == 1)  # the highest key gone
    moved = _values(new)
    lost = [p for p in gone if not any(named(key, instruction) for key in p)
            and _canonical(_at(old, p, tag)) not in moved]
    if lost:
        keys = ", ".join(".".join(p) for p in lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        raise EditError(f"{path}: the output leaves out {keys}, which the instruction does not ask to remove; "
                        "nothing written (ask for it, or --allow-deletions)")
