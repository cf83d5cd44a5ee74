"""The trained span selectors that ship with editllm: LoRA adapters that teach a bundled model copy mode.

Copy mode needs a model that writes good `<copy>`/`<gen>` programs; the base model does not (see
README.md here). So copy mode on a bundled model that has a selector here loads it without any flag:
`adapter_model.safetensors` (peft, for the torch engine) and `adapter.gguf` (the same weights for the
llama.cpp engine), beside `adapter_config.json`. Rewrite and spec never use it (the engine switches it
off for them and for copy mode's fallback: lossless stays the base model's output). `--adapter` picks
another; `--no-adapter` runs the base model.

The files' sha256s are recorded here: a truncated or altered install is refused with one line rather
than loaded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from editllm.editor.errors import EditError

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Selector:
    """A shipped adapter: its folder, the bundled model it was trained on, its files' sha256s."""

    model: str
    folder: Path
    sha256: dict[str, str]

    def check(self) -> Path:
        """The folder, once every file is there with its recorded sha256."""
        for name, want in self.sha256.items():
            path = self.folder / name
            if not path.is_file():
                raise EditError(f"the shipped span selector is incomplete: {path} is missing (reinstall editllm)")
            if file_sha256(path) != want:
                raise EditError(f"the shipped span selector is damaged: {path} has the wrong sha256 "
                                "(reinstall editllm)")
        return self.folder


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


SELECTORS = {
    "bundled:1.5b": Selector("bundled:1.5b", HERE / "qwen2.5-coder-1.5b", {
        "adapter_config.json": "4cb72ec5946441aef67ea6cd44556730f4a2d5c8a4422a32f9f2b3c844cf214b",
        "adapter_model.safetensors": "1e67be2f3007818259d3e055266d785b6dd22d6ad505e8fc168ab71356323728",
        "adapter.gguf": "c6442580bc45a47da7e81afd80785a9612266c0bbc46c25f774d92c1ba86f898",
    }),
}


def selector_for(model: str) -> Selector | None:
    """The selector shipped for this model spec (`bundled:1.5b`, or its default spelling), if any."""
    from editllm.editor.modelspec import bundled_for

    bundled = bundled_for(model)
    return SELECTORS.get(f"bundled:{bundled.key}") if bundled is not None else None


def default_adapter(model: str, mode: str, adapter: str | None, use_selector: bool = True) -> str | None:
    """The adapter a run loads: the one given; else, in copy mode, the selector shipped for the model
    (checked); else none. Other modes never load one: they would not use it."""
    if adapter is not None or not use_selector or mode != "copy":
        return adapter
    selector = selector_for(model)
    return str(selector.check()) if selector is not None else None
