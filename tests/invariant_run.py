"""Run in a fresh process by tests/test_invariant.py: ggml chooses its tiled K-quant kernels once per process,
so batch-invariant and default engines cannot share the test process. Prints one JSON object."""

from __future__ import annotations

import json
import sys

import numpy as np

IDS = [151644, 8948, 198, 2610, 525, 264, 23560, 2038, 6440, 13, 151645, 198, 151644, 872, 198] + [
    (i * 7919) % 30000 + 100 for i in range(90)]


def logits(gguf: str, invariant: bool) -> dict:
    """The last 8 positions' logits decoded three ways: one batch; a batch then 8 single steps; two batches."""
    from editllm.editor.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(gguf, n_ctx=512, n_batch=512, threads=2, batch_invariant=invariant)
    whole = engine.forward(IDS, keep=8).copy()
    engine.reset()
    engine.forward(IDS[:-8], keep=1)
    steps = np.concatenate([engine.forward([t], keep=1).copy() for t in IDS[-8:]])
    engine.reset()
    engine.forward(IDS[:-5], keep=1)
    split = engine.forward(IDS[-5:], keep=5).copy()
    return {"steps_equal_batch": bool(np.array_equal(whole, steps)),
            "split_equal_batch": bool(np.array_equal(whole[-5:], split)),
            "max_diff": float(np.abs(whole - steps).max())}


FILES = {
    "stats.py": "import math\n\n\ndef average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
                "    return total / (len(xs) - 1)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n",
    "notes.md": "# Notes\n\nSome text with a tpyo.\n\n```python\nprint('hi')\n```\n\nMore text here.\n",
    "util.py": "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n"
               "    return x\n",
}


def _edit(lm, name: str, mode: str, tokens: int, edit=None) -> dict:
    from editllm.editor.edit import EditOptions, edit_file
    from editllm.editor.source import source_from_text

    src = source_from_text(FILES[name].encode(), name)
    got: dict = {}
    opts = EditOptions(mode=mode, max_new_tokens=tokens, focus=False, on_ids=lambda _, out: got.update(ids=out))
    try:
        res = (edit or edit_file)(lm, src, "Fix the bug.", opts)
        got["forwards"] = res.stats.forwards
    except Exception as exc:  # noqa: BLE001 - a random model never finishes a file: its tokens are compared
        got["error"] = type(exc).__name__
    return got


class Replay:
    """A drafter that proposes the reference output's next `k` tokens, the last of them wrong where `miss`:
    every forward then verifies a batch (the most a draft can differ from single steps), and a wrong tail is
    cut from the cache."""

    def __init__(self, reference: list[int], k: int, miss: bool) -> None:
        self.reference, self.k, self.miss = reference, k, miss
        self.seen = 0

    def reset(self, prompt_ids: list[int], source_start: int = 0) -> None:
        self.seen = 0

    def append(self, token: int) -> None:
        self.seen += 1

    def propose(self, limit: int | None = None) -> list[int]:
        draft = self.reference[self.seen + 1:self.seen + 1 + min(self.k, limit or self.k)]
        return draft[:-1] + [draft[-1] + 1] if self.miss and len(draft) > 1 else draft

    def feedback(self, accepted: int, drafted: int) -> None:
        pass


def drafts(gguf: str, invariant: bool, tokens: int) -> dict:
    """Greedy decoding step by step, then with every step a verified batch of the reference's own tokens."""
    from editllm.editor.decode import Decoder
    from editllm.editor.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(gguf, n_ctx=1024, n_batch=512, threads=2, batch_invariant=invariant)
    decoder = Decoder(engine)
    reference, _ = decoder.run(IDS, tokens)
    out = {"reference": reference}
    for name, k, miss in (("k8", 8, False), ("k5-miss", 5, True)):
        ids, stats = decoder.run(IDS, tokens, drafter=Replay(reference, k, miss))
        out[name] = {"ids": ids, "forwards": stats.forwards}
    return out


def _program(write) -> str:
    """A copy program's text, or why none came (a random model may write an empty one)."""
    from editllm.editor.copymode import ProgramFailed

    try:
        return write()
    except ProgramFailed as exc:
        return f"failed: {exc}"


def server(gguf: str, invariant: bool, tokens: int) -> dict:
    """Per file: local spec against rewrite through llama-server (output ids), and local copy mode's program
    against the server's copy loop, both sides on the same kernels."""
    from editllm.editor import models
    from editllm.editor.copymode import run_copy
    from editllm.editor.llamaserver import LlamaServer
    from editllm.remote.client import ServerClient
    from editllm.remote.copyloop import copy_parts
    from editllm.remote.modes import RemoteModel, edit_remote, run_copy_loop

    lm = models.load_model(gguf, engine="llamacpp", batch_invariant=invariant)
    out: dict = {}
    with LlamaServer(gguf, ["-c", "2048", "-np", "1", "--no-warmup"], threads=2, batch_invariant=invariant) as srv:
        remote = RemoteModel(ServerClient(srv.url), lm.tokenizer, "tiny")
        for name, text in FILES.items():
            lines = text.splitlines(keepends=True)
            prompt, resolver, stats = copy_parts(remote, name, text, lines, "Fix the bug.")

            def local(name=name, text=text, lines=lines) -> str:
                return run_copy(lm, name, text, "Fix the bug.", tokens, lines=lines,
                                retries=0)[1].program  # one ask, as run_copy_loop is

            def loop(prompt=prompt, resolver=resolver, stats=stats) -> str:
                run_copy_loop(remote, prompt, resolver, stats, tokens)
                return stats.program

            out[name] = {
                "spec": _edit(lm, name, "spec", tokens)["ids"],
                "server_rewrite": _edit(remote, name, "rewrite", tokens, edit=edit_remote)["ids"],
                "copy": _program(local),
                "server_copy": _program(loop),
            }
    return out


if __name__ == "__main__":
    task, *args = sys.argv[1:]
    if task == "logits":
        print(json.dumps(logits(args[0], args[1] == "invariant")))
    elif task == "drafts":
        print(json.dumps(drafts(args[0], args[1] == "invariant", int(args[2]))))
    elif task == "server":
        print(json.dumps(server(args[0], args[1] == "invariant", int(args[2]))))
