"""Convert a peft LoRA adapter into the GGUF form the llama.cpp engine loads (`adapter.gguf` in its folder).

Why llama.cpp's own `convert_lora_to_gguf.py`: it knows how each architecture's HF tensor names map onto
GGUF ones (and the transposes some need), and it is versioned with the llama.cpp that loads the result.
It is not installed with llama-cpp-python's wheel, only shipped in its source distribution
(`vendor/llama.cpp/`, with its `conversion/` package and `gguf-py/`), so the first conversion takes that
sdist (the one llama-server is built from, fetched once with pip by `editor.llamaserver`) and keeps just
those parts in the cache. The script needs the base model's HF config: given none it asks the hub, which
is unreachable offline, so `--base` is always passed (for a bundled model, the folder `editllm model
prepare` writes).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from editllm.editor.errors import EditError
from editllm.editor.llamaserver import LLAMA_CPP_PYTHON, _sdist, server_root
from editllm.editor.modelspec import ADAPTER_GGUF, cache_dir

SCRIPT = "convert_lora_to_gguf.py"
KEEP = (SCRIPT, "conversion/", "gguf-py/")  # under vendor/llama.cpp/ in the sdist: what the script imports
OUTTYPES = ("f32", "f16", "bf16", "q8_0")

Log = Callable[[str], None]


def converter_dir(log: Log | None = None) -> Path:
    """A folder holding `convert_lora_to_gguf.py` with the `conversion/` and `gguf-py/` it imports,
    extracted from the sdist once (about 2 MB of its 77)."""
    from editllm.editor.cachefs import building

    dest = cache_dir() / f"llama-cpp-{LLAMA_CPP_PYTHON}-lora-converter"
    if (dest / SCRIPT).is_file():
        return dest
    root = server_root()  # the sdist is shared with the llama-server build: one download for both
    root.mkdir(parents=True, exist_ok=True)
    sdist = _sdist(root, log)
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
    with building(dest, lambda d: (d / SCRIPT).is_file(), folder=True) as tmp:
        if tmp is None:
            return dest
        with tarfile.open(sdist) as tar:
            members = []
            for member in tar.getmembers():
                rel = member.name.removeprefix(prefix)
                if member.name.startswith(prefix) and rel.startswith(KEEP) and (member.isfile() or member.isdir()):
                    member.name = rel
                    members.append(member)
            tar.extractall(tmp, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        if not (tmp / SCRIPT).is_file():
            raise EditError(f"{sdist.name}: no vendor/llama.cpp/{SCRIPT} in it")
    return dest


def check_lora_folder(adapter: Path) -> None:
    """What the converter reads: a peft LoRA config and its safetensors weights."""
    if not adapter.is_dir():
        raise EditError(f"{adapter}: no such adapter folder")
    if not (adapter / "adapter_config.json").is_file():
        raise EditError(f"{adapter}: not a LoRA adapter folder (no adapter_config.json)")
    if not (adapter / "adapter_model.safetensors").is_file():
        raise EditError(f"{adapter}: no adapter_model.safetensors to convert")


def convert_adapter(adapter: Path, base: Path, outtype: str = "f16", log: Log | None = None) -> Path:
    """Write `adapter/adapter.gguf` from the peft adapter in `adapter`, made for the HF model folder
    `base` (only its config.json is read); return its path. The file appears only when complete."""
    adapter = Path(adapter).expanduser()
    check_lora_folder(adapter)
    if outtype not in OUTTYPES:
        raise EditError(f"unknown --outtype {outtype!r}; choose one of {', '.join(OUTTYPES)}")
    if not (Path(base) / "config.json").is_file():
        raise EditError(f"base model {base}: no config.json (an HF model folder; for a bundled model run "
                        "`editllm model prepare`)")
    script = converter_dir(log) / SCRIPT
    out = adapter / ADAPTER_GGUF
    fd, tmp = tempfile.mkstemp(dir=adapter, prefix=".adapter-", suffix=".gguf")
    os.close(fd)
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, str(script), "--base", str(base), "--outfile", tmp, "--outtype", outtype, str(adapter)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise EditError(f"{adapter}: llama.cpp's {SCRIPT} failed: {last_line(done.stderr)}")
        os.chmod(tmp, 0o644)  # mkstemp made it private; it is a file to ship beside the safetensors
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return out


def last_line(text: str) -> str:
    """The last non-empty line of a tool's stderr: usually the reason it failed."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
