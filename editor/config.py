"""Configuration: `[tool.editllm]` in pyproject.toml or a `.editllm.toml`; command-line flags win.

Looked up from the working directory upwards to the repository root (or filesystem root); the
nearest file that has a setting provides it. `editllm config` shows each value and where it came from.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from editllm.editor.errors import EditError

DEFAULT_MODEL = "bundled:1.5b"  # the one default model name (editor.models re-exports it)
DEFAULTS: dict[str, object] = {
    "model": DEFAULT_MODEL,
    "mode": "spec",
    "instruction": None,
    "include": [],
    "exclude": [],
    "max_file_size": 200_000,
    "device": "auto",
    "dtype": "auto",
    "engine": "auto",
    "copy_kv": "reread",
    "server": None,  # a llama-server or vLLM URL to edit through (editllm.remote); None: the local engine
    "batch_invariant": False,  # llama.cpp kernels whose logits do not depend on the batch (editor.invariant)
}
# The values a setting (and its flag, as a typer choice) may take.
Mode = Literal["rewrite", "spec", "copy"]
Device = Literal["auto", "cpu", "cuda"]
Dtype = Literal["auto", "float32", "bfloat16", "float16"]
Engine = Literal["auto", "torch", "llamacpp", "static"]
CopyRequests = Literal["loop", "one"]  # copy mode through a server: a request per copy tag, or one request
CopyKV = Literal["reread", "reuse"]  # copy mode: re-read copied lines, or take their cache entries from the prompt
CHOICES: dict[str, tuple[str, ...]] = {"mode": get_args(Mode), "device": get_args(Device), "dtype": get_args(Dtype),
                                       "engine": get_args(Engine), "copy_kv": get_args(CopyKV)}
TYPES = {"model": str, "mode": str, "instruction": str, "include": list, "exclude": list,
         "max_file_size": int, "device": str, "dtype": str, "engine": str, "copy_kv": str, "server": str,
         "batch_invariant": bool}


@dataclass
class Config:
    """Effective settings and, for each, where it came from ('default', a file, or 'command line')."""

    values: dict[str, object] = field(default_factory=lambda: dict(DEFAULTS))
    sources: dict[str, str] = field(default_factory=lambda: {k: "default" for k in DEFAULTS})

    def get(self, key: str):
        return self.values[key]

    def override(self, key: str, value) -> None:
        """A command-line flag, when given, wins over every file."""
        if value is not None:
            self.values[key] = value
            self.sources[key] = "command line"


def _read(path: Path) -> dict:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise EditError(f"{path}: cannot read configuration ({exc})") from exc
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("editllm", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise EditError(f"{path}: [tool.editllm] must be a table of settings")
    for key, value in data.items():
        if key not in TYPES:
            raise EditError(f"{path}: unknown editllm setting {key!r}; known: {', '.join(TYPES)}")
        # bool is an int to Python: `max_file_size = true` is not a size
        if not isinstance(value, TYPES[key]) or (TYPES[key] is int and isinstance(value, bool)):
            raise EditError(f"{path}: setting {key!r} must be {TYPES[key].__name__}")
        if TYPES[key] is list and not all(isinstance(v, str) for v in value):
            raise EditError(f"{path}: setting {key!r} must be a list of strings (glob patterns)")
        if key == "max_file_size" and value < 1:
            raise EditError(f"{path}: setting 'max_file_size' must be at least 1 (bytes), not {value}")
        if key in CHOICES and value not in CHOICES[key]:
            raise EditError(f"{path}: setting {key!r} must be one of {', '.join(CHOICES[key])}, not {value!r}")
    return data


def load_config(start: Path | None = None) -> Config:
    """Merge config files from `start` upwards; the nearest file wins per key."""
    config = Config()
    here = (start or Path.cwd()).resolve()
    chain = [here, *here.parents]
    found: list[Path] = []
    for folder in chain:
        for name in (".editllm.toml", "pyproject.toml"):
            if (folder / name).is_file():
                found.append(folder / name)
        if (folder / ".git").exists():
            break
    for path in reversed(found):  # farthest first, so nearer files overwrite
        for key, value in _read(path).items():
            config.values[key] = value
            config.sources[key] = str(path)
    return config
