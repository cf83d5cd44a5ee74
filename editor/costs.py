"""What a forward costs on this engine and machine: timed once at a few sizes, cached per machine.

Why: the best draft length depends on how a batched forward's cost grows with its size, and that
differs by an order of magnitude between engines (llama.cpp on a CPU: a step ~68 ms, a batched token
~20-45 ms; torch float32: ~470 ms and ~26 ms; a GPU: nearly flat). On llama.cpp the growth is not a
line: on 2 AVX2 cores a forward of 8 tokens took 365 ms (46 ms a token) and one of 128 took 2.5 s
(20 ms a token), so a line fitted through 1..64 made small drafts look cheap and kept them short.
`Costs.of` therefore interpolates the measured table; the fitted line is kept for display.
editor.drafter.CostSchedule picks each draft by expected accepted tokens per second from it. Timing
takes ~10 s on a 1.5B model on a CPU, so the table is saved as JSON under the cache dir, keyed by the
CPU model (from /proc/cpuinfo), core count, GPU name and the engine's identity (model file, engine,
context size).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from editllm.editor.cachefs import publish_file
from editllm.editor.drafter import CostSchedule, DraftSchedule, cost_maximum
from editllm.editor.modelspec import cache_dir

# Tokens in one timed forward: a decode step and the sizes a draft may take (editor.drafter.CostSchedule
# drafts only to these, and past the last at its spacing). Dense below 8 and in steps of 8 or more above:
# on 2 AVX2 cores llama.cpp's Q4_K kernels ran a forward of 7 tokens in 241 ms, 8-15 in 386-782 ms, 16
# in 420 ms, 17 in 533 ms and 32 in 731 ms (multiples of 16 are cheap there; another CPU may differ).
SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32, 48, 64, 96, 128)
REPEATS_UNTIL = 16  # sizes up to this are timed twice (fastest kept); longer forwards, once
CONTEXT = 64  # tokens in the cache before the timed forwards, as in a real run (attention is not free)
FORMAT = 2  # 2: the table is what chooses (format 1 saved only four sizes, used through their line)


@dataclass(frozen=True)
class Costs:
    """The measured (k, seconds) pairs, `times`, and the line `step + per_token * k` fitted to them."""

    step: float
    per_token: float
    times: tuple[tuple[int, float], ...] = ()

    def of(self, k: int) -> float:
        """Seconds for a forward of k tokens: the measured table, linear between its sizes and, past
        its last, at the last size's cost per token (no gain from batching assumed where none was
        measured); the line where fewer than two sizes were measured."""
        table = sorted(self.times)
        if len(table) < 2:
            return self.step + self.per_token * k
        for (k0, t0), (k1, t1) in zip(table, table[1:], strict=False):
            if k <= k1:
                return max(t0 + (t1 - t0) * (k - k0) / (k1 - k0), 1e-9)
        k1, t1 = table[-1]
        return t1 * k / k1

    def sizes(self, maximum: int) -> list[int]:
        """The forward sizes whose cost is known, up to `maximum`: the measured ones, then onwards at
        the last measured spacing (where the table's line runs on). Empty without a table."""
        ks = sorted(k for k, _ in self.times)
        if len(ks) < 2:
            return []
        step = ks[-1] - ks[-2]
        ks += list(range(ks[-1] + step, maximum + 1, step))
        return [k for k in ks if k <= maximum]

    def long_enough(self, maximum: int, within: float = 1.1) -> int:
        """The shortest forward whose cost per token is within `within` of the cheapest per token up to
        `maximum`: a draft longer than that saves almost nothing per token and wastes more when an edit
        cuts it. On 2 AVX2 cores (llama.cpp) that is 64: a token cost 20.1 ms in a forward of 64 and
        19.7 ms in one of 128; on a GPU, where batching is nearly free, it is the longest measured. In
        replayed spec runs the cap moved decode time by under 4 % either way (the table past 64 tokens
        is noisy on a busy CPU); it bounds what an edit that cuts a draft wastes."""
        sizes = self.sizes(maximum) or [maximum]
        best = min(self.of(k) / k for k in sizes)
        return next(k for k in sizes if self.of(k) / k <= within * best)

    def as_dict(self) -> dict:
        """Rounded to 0.1 ms: the bench's --reuse compares them (a re-measurement differs in noise)."""
        return {"step_ms": round(self.step * 1e3, 1), "per_token_ms": round(self.per_token * 1e3, 1),
                "table_ms": [[k, round(t * 1e3, 1)] for k, t in self.times]}


def fit(times: dict[int, float]) -> Costs:
    """Least squares of seconds against k, weighted by 1/seconds² (relative error), so the one-token
    step counts as much as the 64-token batch. Both coefficients are kept positive."""
    ks = sorted(times)
    w = [1.0 / max(times[k], 1e-9) ** 2 for k in ks]
    sw = sum(w)
    mk = sum(wi * k for wi, k in zip(w, ks, strict=True)) / sw
    mt = sum(wi * times[k] for wi, k in zip(w, ks, strict=True)) / sw
    var = sum(wi * (k - mk) ** 2 for wi, k in zip(w, ks, strict=True))
    cov = sum(wi * (k - mk) * (times[k] - mt) for wi, k in zip(w, ks, strict=True))
    per_token = max(cov / var if var else 0.0, 1e-7)
    step = max(mt - per_token * mk, 1e-6)
    return Costs(step, per_token, tuple((k, times[k]) for k in ks))


def measure(engine, sizes: tuple[int, ...] = SIZES, repeats: int = 2) -> Costs:
    """Time forwards of each size after CONTEXT tokens (fastest of `repeats` up to REPEATS_UNTIL
    tokens, once beyond: ~12 s on a 1.5B model on 2 cores), then fit. The engine is reset before and
    after; the tokens are arbitrary ids (cost does not depend on which)."""
    engine.reset()
    engine.forward([1000 + k for k in range(CONTEXT)], keep=1)
    times: dict[int, float] = {}
    for k in sizes:
        best = float("inf")
        # an engine that captures a shape after some forwards of it (CUDA graphs) is timed on a later one
        for _ in range(max(repeats if k <= REPEATS_UNTIL else 1, getattr(engine, "calls_to_warm", 0) + 1)):
            t0 = time.perf_counter()
            rows = engine.forward([2000 + j for j in range(k)], keep=k)
            int(rows[-1].argmax())  # waits for an asynchronous device
            best = min(best, time.perf_counter() - t0)
            engine.truncate(k)
        times[k] = best
    engine.reset()
    return fit(times)


def cpu_kind() -> str:
    """What tells CPUs apart where the name does not (a hypervisor says `AMD EPYC` or `Intel(R) Xeon(R)
    Processor` for several generations): family, model, stepping and a digest of the feature flags."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name in ("cpu family", "model", "stepping", "flags", "Features") and name not in fields:
                fields[name] = value.strip()
            if not line.strip() and fields:  # the first processor's block is enough
                break
    flags = " ".join(sorted((fields.pop("flags", "") + " " + fields.pop("Features", "")).split()))
    head = "/".join(fields.get(k, "") for k in ("cpu family", "model", "stepping"))
    return f"{head}/{hashlib.sha256(flags.encode()).hexdigest()[:12]}" if flags or head.strip("/") else ""


def cpu_name() -> str:
    """The CPU model, as /proc/cpuinfo names it (empty where there is none)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


def engine_identity(engine) -> dict | None:
    """What the costs depend on besides the machine; None for an engine that names no model (test
    doubles), whose costs are measured but not saved."""
    identity = getattr(engine, "identity", None)
    if identity is not None:
        return dict(identity)
    model = getattr(engine, "model", None)
    name = getattr(getattr(model, "config", None), "_name_or_path", "")
    if not name:
        return None
    device = getattr(engine, "device", "")
    gpu = ""
    if getattr(device, "type", "") == "cuda":
        import torch

        gpu = torch.cuda.get_device_name(device)
    return {"engine": "torch", "model": name, "dtype": str(getattr(model, "dtype", "")), "device": str(device),
            "gpu": gpu}


def costs_path(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / "costs" / f"{digest}.json"


def engine_costs(engine) -> Costs:
    """The engine's costs: from the engine object, else the cache dir, else measured now and saved."""
    known = getattr(engine, "_costs", None)
    if known is not None:
        return known
    identity = engine_identity(engine)
    key = {"format": FORMAT, "cpu": cpu_name(), "cpu_kind": cpu_kind(), "cores": os.cpu_count(), "engine": identity}
    if identity is not None and identity.get("engine") == "llamacpp":  # passive waiting: 1.6× slower steps
        from editllm.editor.waitpolicy import llama_policy

        key["omp_wait_policy"] = llama_policy()
    path = costs_path(key) if identity is not None else None
    costs = _load(path, key) if path is not None else None
    if costs is None:
        costs = measure(engine)
        if path is not None:
            _save(path, key, costs)
    with contextlib.suppress(AttributeError):
        engine._costs = costs
    return costs


def _load(path: Path, key: dict) -> Costs | None:
    """Saved costs for exactly `key`; anything unreadable or for another key is measured again."""
    try:
        d = json.loads(path.read_text())
        if d["key"] != json.loads(json.dumps(key)):
            return None
        return Costs(float(d["step"]), float(d["per_token"]), tuple((int(k), float(t)) for k, t in d["times"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _save(path: Path, key: dict, costs: Costs) -> None:
    """Atomic write; a read-only cache dir only means measuring again next time."""
    with contextlib.suppress(OSError):
        publish_file(path, json.dumps({"key": key} | asdict(costs), indent=1).encode())


def draft_schedule(spec: str, engine) -> DraftSchedule | CostSchedule:
    """The schedule a `--draft` spec names on this engine: `cost[:MAX]` measures (or loads) the
    engine's costs; `fixed:K` and `adaptive:...` need none."""
    if spec.partition(":")[0] != "cost":
        return DraftSchedule.parse(spec)
    costs = engine_costs(engine)
    forward = costs.long_enough(cost_maximum(spec) + 1)  # a draft and the pending token
    return CostSchedule(costs.of, forward - 1, costs.sizes(forward))
