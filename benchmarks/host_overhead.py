"""What the host costs to decode, with the model's time taken out: the pipeline on a null engine.

Why: on a GPU a forward of the 1.5B takes a few milliseconds, so the Python around it (the verify loop, the
drafter, the stop check, copy mode's FSM, and for a batch of files the threads that hand their forwards to
one decode) is a real share of an edit's time, and of the GPU issue's targets (5,000 tokens/s for one file,
20,000 for 32 files in one batch). That share depends on the host's CPU, not on the GPU, so it is measured
here, on any machine, in seconds: every file goes through `EditSession` (prompt, focus off, the one verify
loop, stop rule, checks, diff) exactly as in a real edit, but the engine answers each forward from a script
at once. What a real edit takes is this plus the device's time (the engine's forwards, not overlapped with it).

The null engine writes each file's edited text (the script) token for token, whatever it is shown: a row's
prediction is the script's token at its position, as `tests/fakes.ScriptedModel` does, so drafts are
verified and cut exactly as a model that writes that text would. Its rows carry only their argmax ids (the
static engine copies back only token ids too). The edit adds ` -> None` to every `def` line that ends in
`):`, the density of changes a type-hint edit has. Modes: rewrite, spec, and oracle, one file at a time (copy
mode's runtime with the gold program given: its FSM, the copied lines fed in one forward each, the resolver;
copy mode proper adds the drafter inside gen spans, and its program is no script by position, since copied
lines join the sequence between its tokens). Files: standard-library modules, as `throughput.py --modules`
picks them.

    python benchmarks/host_overhead.py --files 32 --min-lines 80 --max-lines 300 --mode rewrite,spec,oracle \
        --jobs 1,32 --rounds 3 --out DIR

`--jobs 1` edits the files one at a time; `--jobs N` decodes N together on rows of one null cache
(`editor.batched`, as on the static engine), so its extra over one at a time is the threads' hand-offs.
Reported per mode and jobs: the median round's seconds, output tokens per second with no device time (the
host's ceiling), host microseconds per output token and per forward, and the files whose edit came out as
scripted (all of them, or the null engine did not drive the pipeline as a model would).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from editllm.editor.static import StaticEngine

IM_START = "<|im_start|>"  # every prompt's last turn opens with it, no output holds it
INSTRUCTION = "Add type hints to every function."


def edited(text: str) -> str:
    """The script's edit: ` -> None` on every `def` line that ends in `):`."""
    return "\n".join(line[:-2] + ") -> None:" if line.lstrip().startswith("def ") and line.endswith("):") else line
                     for line in text.split("\n"))


class _Ids(list):
    def tolist(self) -> list[int]:
        return list(self)


class NullRows:
    """One forward's rows as the decoder reads them: their argmax ids, and a row per position for a steer's
    `pick` (a one-wide tensor: the script's token is the argmax and legal, so no mask is ever applied)."""

    def __init__(self, ids: list[int], row) -> None:
        self.ids, self.row = ids, row

    def argmax(self, dim: int = -1) -> _Ids:
        return _Ids(self.ids)

    def __getitem__(self, i: int):
        return self.row

    def __len__(self) -> int:
        return len(self.ids)


class NullEngine(StaticEngine):
    """The static engine with its model taken out: its Engine interface (one sequence: forward, truncate, reset,
    start) and sequence interface (`editor.batched.Rows`) as they are, but each forward answered from scripts:
    `scripts` maps a line of each file (found in its prompt) to the ids that file's output is. No cache, no
    adapter."""

    def __init__(self, tokenizer, scripts: dict[str, list[int]], seqs: int = 1, n_ctx: int = 32768,
                 wait: float = 0.0) -> None:
        """`wait`: seconds each decode sleeps, the GIL released, as a device step would (0: none; the tests
        use a little, so that the files of a batch surely overlap)."""
        import torch
        from editllm.editor.costs import Costs

        self.tokenizer, self.scripts, self.seqs, self.n_ctx, self.wait = tokenizer, scripts, seqs, n_ctx, wait
        self.eos = frozenset({tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")} - {None})
        self.end = min(self.eos)
        self.vocab_size = self.n_vocab = len(tokenizer)
        self.im_start = tokenizer.convert_tokens_to_ids(IM_START)
        self.graphs, self.has_adapter = False, False
        self.adapter_seqs = [False] * seqs
        self.row = torch.zeros(1)
        # a GPU's forward costs nearly the same for 1 token as for 128: drafts as long as the match
        self._costs = Costs(1e-3, 0.0, ((1, 1e-3), (128, 1e-3)))
        self.head = [0] * seqs  # tokens in a sequence before its prompt's rest (a kept prefix)
        self.prompt_end = [0] * seqs
        self.script: list[list[int]] = [[] for _ in range(seqs)]
        self.held: tuple[int, ...] = ()
        self._length = 0

    identity = {"engine": "null"}
    calls_to_warm = 0

    def with_seqs(self, seqs: int) -> NullEngine:
        return NullEngine(self.tokenizer, self.scripts, seqs, self.n_ctx, self.wait)

    def seq_share(self, src: int, dst: int, n: int) -> None:
        self.head[dst] = n

    def load_prefix(self, seq: int, ids: tuple[int, ...]) -> str:
        self.decode_seqs([(seq, list(ids), 0, 1)])
        return "read"

    def close(self) -> None:
        pass

    def decode_seqs(self, requests: list[tuple[int, list[int], int, int]]) -> list[NullRows]:
        """Each request's rows: the script's token after each of its last `keep` positions."""
        if self.wait:
            time.sleep(self.wait)
        out = []
        for seq, ids, pos, keep in requests:
            if pos == 0:
                self.head[seq] = len(ids)  # a kept prefix, or a whole prompt read at once
            if pos == 0 or (pos == self.head[seq] and self.im_start in ids):
                # the prompt (its rest after a kept prefix) ends `keep - 1` tokens before the input: those are
                # the first draft, which the prompt's forward carries
                self.prompt_end[seq] = pos + len(ids) - (keep - 1)
                self.script[seq] = self.find(ids)
            script, start = self.script[seq], self.prompt_end[seq]
            first = pos + len(ids) - keep + 1 - start  # the output index the first kept row predicts
            out.append(NullRows([script[j] if 0 <= j < len(script) else self.end for j in range(first, first + keep)],
                                self.row))
        return out

    def find(self, ids: list[int]) -> list[int]:
        """The script of the file whose marker line is in this prompt text ([] for the fixed prefix: no file)."""
        text = self.tokenizer.decode(ids)
        return next((script for marker, script in self.scripts.items() if marker in text), [])


def scripts_for(tokenizer, texts: list[str]) -> dict[str, list[int]]:
    """Each file's marker (its longest line found in no other file) and its output ids: the edited file, then
    the closing fence, as the rewrite prompt asks a model to write it."""
    scripts = {}
    for text in texts:
        lines = sorted(set(text.split("\n")), key=lambda line: (-len(line), line))
        marker = next((line for line in lines if len(line) >= 20 and sum(line in t for t in texts) == 1), None)
        if marker is None:
            raise SystemExit("a file has no line of its own to be found by in its prompt")
        scripts[marker] = tokenizer(edited(text) + "```\n", add_special_tokens=False)["input_ids"]
    return scripts


def null_model(tokenizer, texts: list[str], wait: float = 0.0):
    """A `LoadedModel` on the null engine, standing for the static engine (so several files batch). Its
    `model` is a one-parameter module on the CPU: there the rows' room is not limited by a GPU's memory."""
    import torch
    from editllm.editor.models import LoadedModel

    engine = NullEngine(tokenizer, scripts_for(tokenizer, texts), wait=wait)
    return LoadedModel(torch.nn.Linear(1, 1), tokenizer, "null", "cpu", torch.float32, 0.0, "static", None, engine)


def run(lm, folder: Path, mode: str, jobs: int, rounds: int) -> dict:
    """Every file in `folder` edited `rounds` times with `jobs` files together; the median round's figures.
    Output tokens are the edited files' tokens (what rewrite writes, its closing fence left out), in every mode."""
    from editllm.api.session import EditSession

    paths = sorted(folder.glob("*.py"))
    if mode == "oracle" and jobs != 1:
        raise SystemExit("oracle runs one file at a time (--jobs 1)")
    session = None if mode == "oracle" else EditSession(lm, mode=mode, focus=False)
    if session is not None and jobs > 1:
        session.open_rows(jobs)
    rows = session._rows if session is not None else None
    timed = []
    for _ in range(rounds):
        batches = rows.stats.batches if rows is not None else 0
        started = time.perf_counter()
        if session is None:
            outs = [oracle_one(lm, path) for path in paths]
        else:
            report = session.edit_many(paths, INSTRUCTION, jobs=jobs, retries=0)
            outs = [(o.edit.old_text, o.edit.new_text, o.edit.stats.forwards) for o in report.outcomes if o.edit]
        seconds = time.perf_counter() - started
        forwards = sum(f for *_, f in outs)  # each file's, its prompt's included
        decodes = rows.stats.batches - batches if rows is not None else forwards
        timed.append((seconds, outs, forwards, decodes))
    if session is not None:
        session.close_rows()
    seconds, outs, forwards, decodes = sorted(timed, key=lambda t: t[0])[(rounds - 1) // 2]
    right = sum(new == edited(old) for old, new, _ in outs)
    tokens = sum(len(lm.tokenizer(edited(path.read_text()), add_special_tokens=False)["input_ids"]) for path in paths)
    return {"mode": mode, "jobs": jobs, "files": len(paths), "right": right, "output_tokens": tokens,
            "forwards": forwards, "decodes": decodes, "seconds": round(seconds, 3),
            "rounds_seconds": [round(t, 3) for t, *_ in timed],
            "tokens_per_second": round(tokens / seconds), "us_per_token": round(1e6 * seconds / tokens, 2),
            "us_per_forward": round(1e6 * seconds / forwards, 1)}


def oracle_one(lm, path: Path) -> tuple[str, str, int]:
    """One file's gold program through copy mode's runtime (`copymode.run_oracle`): its old and new text and
    forwards. The program is given, so the engine's rows go unread."""
    from editllm.editor.copymode import run_oracle
    from editllm.grammar.program import oracle

    text = path.read_text()
    new, stats = run_oracle(lm, path.name, text, INSTRUCTION, oracle(text, edited(text)))
    return text, new, stats.forwards


def table(results: list[dict]) -> str:
    """The report's table: one row per mode and jobs."""
    rows = ["| mode | jobs | files right | output tokens | forwards (decodes) | s, median round | tokens/s, no device "
            "time | µs a token | µs a forward |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r['mode']} | {r['jobs']} | {r['right']}/{r['files']} | {r['output_tokens']} | "
                    f"{r['forwards']} ({r['decodes']}) | {r['seconds']} | {r['tokens_per_second']:,} | "
                    f"{r['us_per_token']} | {r['us_per_forward']} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    import os
    import platform

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=32)
    ap.add_argument("--min-lines", type=int, default=80)
    ap.add_argument("--max-lines", type=int, default=300)
    ap.add_argument("--mode", default="rewrite,spec,oracle", help="rewrite, spec, oracle (with --jobs 1 only)")
    ap.add_argument("--jobs", default="1,32", help="files decoded together, comma-separated (1: one at a time)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default="bundled:1.5b", help="whose tokenizer the prompts and scripts use "
                    "(transformers': the static engine's)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.files < 1:
        ap.error("--rounds and --files must be at least 1")
    from editllm.bench.throughput import stdlib_modules

    tokenizer = load_tokenizer(args.model)
    modules = stdlib_modules(args.files, args.max_lines, args.min_lines)
    folder = Path(tempfile.mkdtemp(prefix="editllm-host-"))
    for name, text in modules:
        (folder / name).write_text(text)
    lm = null_model(tokenizer, [text for _, text in modules])
    results = []
    for mode in args.mode.split(","):
        for jobs in (int(j) for j in args.jobs.split(",") if mode != "oracle" or j == "1"):
            results.append(run(lm, folder, mode, jobs, args.rounds))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    machine = {"cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()}
    text = (f"Host cost of decoding, no device time ({machine['cpu']}, {machine['cores']} cores, Python "
            f"{machine['python']}): {len(modules)} standard-library modules of {args.min_lines}-{args.max_lines} "
            f"lines, median of {args.rounds} rounds.\n\n" + table(results) + "\n")
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"machine": machine, "args": vars(args) | {
            "out": str(args.out)}, "results": results}, indent=1) + "\n")
        (args.out / "report.md").write_text(text)


def load_tokenizer(spec: str):
    """The model's transformers tokenizer (a GGUF's, as `editor.models.gguf_tokenizer` saved it)."""
    from editllm.editor.models import gguf_of, gguf_tokenizer, tokenizer_dir
    from transformers import AutoTokenizer

    gguf = gguf_of(spec)
    if gguf is None:
        return AutoTokenizer.from_pretrained(spec)
    gguf_tokenizer(gguf)  # saves transformers' files on first use
    return AutoTokenizer.from_pretrained(tokenizer_dir(gguf))


def _cpu_name() -> str:
    from editllm.editor.costs import cpu_name

    return cpu_name()


if __name__ == "__main__":
    main()
