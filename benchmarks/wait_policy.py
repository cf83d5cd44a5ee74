"""What OpenMP's wait policy costs llama.cpp here: llama-bench and the in-process engine, passive against
libgomp's default (`editor.waitpolicy` says why editllm sets passive for torch only).

    python benchmarks/wait_policy.py --out DIR

Each policy runs in fresh processes (libgomp reads the variable once, when it loads): `llama-bench` (prompt
of --prompt tokens, --gen tokens written, --reps repetitions) and the llama.cpp engine (`LlamaCppEngine`:
the prompt's forward, then --gen single-token steps and forwards of 4 tokens; the median of --reps runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

POLICIES = {"default": None, "PASSIVE": "PASSIVE"}

ENGINE_PROBE = r"""
import json, sys, time
from editllm.editor.llamacpp import LlamaCppEngine
gguf, prompt, gen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
e = LlamaCppEngine(gguf, None)
e.forward(list(range(1000, 1000 + prompt)), 1)  # warm the pages and the kernels
e.reset()
t0 = time.perf_counter(); e.forward(list(range(1000, 1000 + prompt)), 1); pp = time.perf_counter() - t0
t0 = time.perf_counter()
for k in range(gen):
    e.forward([2000 + k], 1)
step = (time.perf_counter() - t0) / gen
t0 = time.perf_counter()
for k in range(8):
    e.forward([3000 + j for j in range(4)], 4)
four = (time.perf_counter() - t0) / 8
print(json.dumps({"prompt_tokens_per_s": prompt / pp, "step_ms": 1000 * step, "four_token_forward_ms": 1000 * four}))
"""


def environment(policy: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "EDITLLM_OMP_WAIT_POLICY_DEFAULT")}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    return env


def llama_bench(gguf: str, policy: str | None, prompt: int, gen: int, reps: int, threads: int) -> list[dict]:
    from editllm.editor.llamaserver import tool_path

    cmd = [str(tool_path("llama-bench")), "-m", gguf, "-t", str(threads), "-p", str(prompt), "-n", str(gen),
           "-r", str(reps), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=environment(policy)).stdout
    return [{"test": f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}",
             "tokens_per_s": round(r["avg_ts"], 2), "stddev": round(r["stddev_ts"], 2)} for r in json.loads(out)]


def engine(gguf: str, policy: str | None, prompt: int, gen: int, reps: int) -> dict:
    runs = [json.loads(subprocess.run([sys.executable, "-c", ENGINE_PROBE, gguf, str(prompt), str(gen)],
                                      capture_output=True, text=True, check=True, env=environment(policy)).stdout)
            for _ in range(reps)]
    return {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="bundled:1.5b")
    ap.add_argument("--prompt", type=int, default=86)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from editllm.editor.costs import cpu_name
    from editllm.editor.models import gguf_of

    gguf = str(gguf_of(args.model))
    result = {"model": args.model, "cpu": cpu_name(), "cores": os.cpu_count(), "threads": args.threads,
              "policies": {}}
    for name, policy in POLICIES.items():
        result["policies"][name] = {
            "llama_bench": llama_bench(gguf, policy, args.prompt, args.gen, args.reps, args.threads),
            "engine": engine(gguf, policy, args.prompt, args.gen, args.reps)}
        print(name, json.dumps(result["policies"][name]), file=sys.stderr, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
