"""What shapes a bench run, recorded in results.json, and `--reuse`: an earlier run's rewrite baseline is
taken only when every one of those settings matches, since a speedup over a baseline made differently
(another dtype, prompt, focus, adapter ...) is not a speedup of the method."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from editllm.editor.edit import EditOptions
from editllm.editor.errors import EditError
from editllm.editor.models import LoadedModel


class _ChatTemplate:
    """Stands in for a tokenizer: renders chat messages verbatim, so the hash sees only our fixed text
    (the model's own chat template is covered by the model's name)."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True) -> str:
        return json.dumps(messages)


def prompt_version() -> str:
    """12 hex digits of sha256 over every rewrite layout and the copy prompt rendered for one fixed file
    (and the rewrite prompt for a prose file): a changed system text, wording, worked example or layout
    changes it."""
    from editllm.editor.prompt import LAYOUTS, copy_prompt, rewrite_prompt

    path, text, instruction = "probe.py", "def f(x):\n    return x\n", "Fix the bug in `f`."
    parts = [rewrite_prompt(_ChatTemplate(), path, text, instruction, layout).text for layout in LAYOUTS.values()]
    parts.append(rewrite_prompt(_ChatTemplate(), "README.md", "Some text.\n", "Fix the typos.").text)  # prose wording
    parts.append(copy_prompt(_ChatTemplate(), path, text, instruction))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def adapter_identity(adapter: str | None) -> dict | None:
    """The adapter's path and a sha256 of its files (names and bytes): the same path may hold another
    training run. A path that is not on disk (a hub id) is recorded by name only."""
    if not adapter:
        return None
    root = Path(adapter)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root] if root.is_file() else []
    if not files:
        return {"path": adapter, "sha256": None}
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(root) if root.is_dir() else f.name).encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return {"path": adapter, "sha256": digest.hexdigest()}


def run_settings(lm: LoadedModel, opts: EditOptions, adapter: str | None) -> dict:
    """The settings that shape a run's records (results.json's `settings`). The engine's measured
    forward costs are among them: they choose the draft lengths of the `cost` schedule (editor.costs;
    cached per machine, so a second run on the same machine matches)."""
    from editllm.editor.costs import engine_costs

    served = getattr(lm, "client", None) is not None  # bench --server: the engine runs elsewhere
    settings = {
        "engine": lm.engine_name, "model": lm.name, "device": lm.device, "dtype": str(lm.dtype).removeprefix("torch."),
        "focus": opts.focus, "layout": opts.layout, "draft": opts.draft, "gamma": opts.gamma,
        "max_new_tokens": opts.max_new_tokens, "adapter": adapter_identity(adapter),
        "prompt_version": prompt_version(),
        # what a server runs is its URL and speculation, not costs timed here
        "costs": None if served else engine_costs(lm.engine).as_dict(),
    }
    if served:
        settings |= {"server": lm.info.url, "speculative": lm.info.speculative}
    elif getattr(lm.engine, "batch_invariant", False):  # other kernels, other texts at near-ties (editor.invariant)
        settings["batch_invariant"] = True
    return settings


def read_run(folder: Path) -> dict:
    """An earlier `--out` folder's results.json, with each rewrite record's text from outputs.jsonl under
    "text": read and checked before the model loads, so a missing or damaged file is one line naming it."""
    path = folder / "results.json"
    if not folder.is_dir():
        raise EditError(f"--reuse {folder}: no such folder")
    if not path.is_file():
        raise EditError(f"--reuse {folder}: no results.json there")
    results = _json(path, path.read_bytes())
    records = results.get("records") if isinstance(results, dict) else None
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("id"), str)
                                                and isinstance(r.get("mode"), str) for r in records):
        raise EditError(f"{path}: not a bench results.json (no list of records with `id` and `mode`)")
    texts = {}
    outputs = folder / "outputs.jsonl"
    if outputs.exists():
        for n, line in enumerate(outputs.read_bytes().splitlines(), 1):
            if not line.strip():
                continue
            d = _json(f"{outputs}:{n}", line)
            if not (isinstance(d, dict) and {"id", "mode", "text"} <= d.keys()):
                raise EditError(f"{outputs}:{n}: not a bench output (an object with `id`, `mode` and `text`)")
            texts[(d["id"], d["mode"])] = d["text"]
    results["records"] = [r | {"text": texts.get((r["id"], r["mode"]))} for r in records]
    return results


def _json(where: Path | str, data: bytes):
    """`data` parsed, or one line naming the file (and line) that is not JSON: a folder copied half-way."""
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EditError(f"--reuse: {where}: not valid JSON ({exc})") from exc


def load_previous(folder: Path, settings: dict, run: dict | None = None) -> dict[tuple[str, str], dict]:
    """The rewrite records of an earlier run made with the same `settings`, keyed by (case id, "rewrite"),
    texts restored. Only the expensive baseline is reused: every other mode runs with today's settings.
    `run`: the folder's `read_run`, read ahead. Raises EditError naming the first setting that differs (or
    that the earlier run did not record)."""
    results = run if run is not None else read_run(folder)
    earlier = results.get("settings")
    if not isinstance(earlier, dict):
        raise EditError(f"--reuse {folder}: its results.json records no run settings (a bench from before they "
                        "were recorded), so its baseline cannot be matched; run the baseline again")
    for key, value in settings.items():
        if key not in earlier:
            raise EditError(f"--reuse {folder}: its run did not record `{key}`; run the baseline again")
        if earlier[key] != value:
            raise EditError(f"--reuse {folder}: its baseline was made with {key} = {json.dumps(earlier[key])}, "
                            f"this run uses {json.dumps(value)}; match it or run the baseline again")
    return {(r["id"], r["mode"]): r for r in results["records"] if r["mode"] == "rewrite"}
