"""llama.cpp's default kernels against its batch-invariant ones (`editor.invariant`): do a token's logits
depend on its batch, and what does invariance cost?

    python benchmarks/invariance.py --model bundled:1.5b --rounds 3 --out DIR

Each (kernels, round) runs in a fresh process: ggml picks its tiled K-quant matmul once per process.
A process decodes the same 700 tokens (this file's own source, tokenized) four ways and compares the last
8 positions' logits bit for bit with a batch followed by single steps; then it times one forward of 512
prompt tokens and forwards of 1, 4, 8, 16, 32 and 64 tokens after them (each cut from the cache again,
median of 7 or 3). Rounds alternate the two kernels; the report gives medians over rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

SIZES = (1, 4, 8, 16, 32, 64)


def probe(gguf: str, invariant: bool) -> dict:
    """One process's measurements (run by `main` in a child)."""
    import numpy as np
    from editllm.editor.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(gguf, n_ctx=2048, n_batch=512, batch_invariant=invariant)
    raw = Path(__file__).read_bytes()  # tokenized by llama.cpp itself: no tokenizer files needed
    buf = (engine.ll.llama_token * 4096)()
    n = engine.ll.llama_tokenize(engine.ll.llama_model_get_vocab(engine.model), raw, len(raw), buf, 4096, True, False)
    toks = list(buf[:n])[:700]

    def rows(splits: list[int], keep: int) -> np.ndarray:
        engine.reset()
        out = None
        for a, b in zip([0, *splits], [*splits, len(toks)], strict=True):
            out = engine.forward(toks[a:b], keep=min(keep, b - a)).copy()
        return out

    engine.reset()
    engine.forward(toks[:-8], keep=1)
    steps = np.concatenate([engine.forward([t], keep=1).copy() for t in toks[-8:]])
    ways = {"one batch": rows([], 8), "prefix 254 + rest": rows([254], 8), "two batches (-8)": rows([len(toks) - 8], 8),
            "two batches (-5)": rows([len(toks) - 5], 5)}
    same = {name: bool(np.array_equal(r, steps[-len(r):])) for name, r in ways.items()}
    diff = {name: float(np.abs(r - steps[-len(r):]).max()) for name, r in ways.items()}
    engine.reset()
    engine.forward(toks[:64], keep=1)  # warm
    engine.reset()
    t0 = time.perf_counter()
    engine.forward(toks[:512], keep=1)
    timing = {"prompt_tokens_per_s": 512 / (time.perf_counter() - t0)}
    for size in SIZES:
        runs = []
        for _ in range(7 if size <= 8 else 3):
            t0 = time.perf_counter()
            engine.forward(toks[512:512 + size], keep=size)
            runs.append(time.perf_counter() - t0)
            engine.truncate(size)
        timing[f"forward_{size}_ms"] = statistics.median(runs) * 1000
    return {"invariant": invariant, "same_as_steps": same, "max_abs_diff": diff, "timing": timing}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--probe", choices=("default", "invariant"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    from editllm.editor.models import gguf_of

    gguf = str(gguf_of(args.model))
    if args.probe:
        print(json.dumps(probe(gguf, args.probe == "invariant")))
        return
    runs: list[dict] = []
    for r in range(args.rounds):
        for kernels in (("default", "invariant") if r % 2 == 0 else ("invariant", "default")):
            done = subprocess.run([sys.executable, __file__, "--model", args.model, "--out", str(args.out),
                                   "--probe", kernels], capture_output=True, text=True, check=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]) | {"round": r})
            print(kernels, r, runs[-1]["same_as_steps"], {k: round(v, 1) for k, v in runs[-1]["timing"].items()},
                  file=sys.stderr, flush=True)
    report: dict = {"model": args.model, "rounds": args.rounds, "runs": runs, "median": {}}
    for kernels in (False, True):
        mine = [x for x in runs if x["invariant"] is kernels]
        report["median"]["invariant" if kernels else "default"] = {
            "same_as_steps_every_round": {k: all(x["same_as_steps"][k] for x in mine)
                                          for k in mine[0]["same_as_steps"]},
            "max_abs_diff": {k: max(x["max_abs_diff"][k] for x in mine) for k in mine[0]["max_abs_diff"]},
            "timing": {k: statistics.median(x["timing"][k] for x in mine) for k in mine[0]["timing"]}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report["median"], indent=1))


if __name__ == "__main__":
    main()
