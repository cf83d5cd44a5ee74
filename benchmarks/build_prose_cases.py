"""Build the prose bench cases: typo, wording and link edits on real READMEs of installed packages.

    python benchmarks/build_prose_cases.py          # writes benchmarks/cases/prose.jsonl

Each case is a 40-120-line chunk of a package's long description (its PyPI README, read from the
installed metadata), cut at block boundaries so no fenced code block is split, holding at least one
fenced code block. Into its prose (never inside code blocks, inline code or links) go 2-4 spelling
mistakes ("Fix the spelling mistakes. Change nothing else."), or one requested word replacement or
link change. `before` is the damaged chunk, `after` the original; `edits` lists the lines to change
(1-based line in `before`, the line before, the line after) for benchmarks/prose_metrics.py.

Cases from HELDOUT packages carry `"heldout": true`: no training generator may read those packages'
text (training/data.py mines Python files of its own PACKAGES list; none of these is on it). Only
permissively licensed packages are used (MIT, BSD, Apache-2.0); each case names its source and
licence. Seeded: the same installed versions give byte-identical output.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import random
import re
import zlib
from pathlib import Path

SEED = 20250119
TRAIN_SIDE = ["rich", "typer", "accelerate", "unidiff", "huggingface_hub", "gitpython", "transformers", "peft",
              "markdown_it_py", "tokenizers", "gguf", "safetensors"]
HELDOUT = ["ruff", "cfgv", "httpx2", "identify", "annotated_types", "termcolor", "urllib3", "platformdirs",
           "truststore", "charset_normalizer", "pydantic_core", "fire", "fsspec", "requests"]
PERMISSIVE = re.compile(r"\b(MIT|BSD|Apache)", re.I)
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
WORD = re.compile(r"(?<![\w./@#-])[a-z]{6,}(?![\w/@-])")
PROTECTED = re.compile(r"`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]*>|https?://\S+|\S+@\S+")
URL = re.compile(r"https?://[^\s)>\]\"'`]+")
WORDING = [("library", "package"), ("simple", "straightforward"), ("function", "routine"),
           ("supports", "handles"), ("provides", "offers"), ("allows", "lets"), ("easily", "readily"),
           ("documentation", "docs"), ("quickly", "rapidly")]
TYPO_INSTRUCTION = "Fix the spelling mistakes. Change nothing else."
CASES_PER_PACKAGE = 2


def licence(meta) -> str:
    """The package's licence as its metadata states it ("" when not stated)."""
    text = meta.get("License-Expression") or meta.get("License") or ""
    if not PERMISSIVE.search(text[:80]):
        text = " ".join(c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if "License ::" in c)
    return text.strip().splitlines()[0][:60] if text.strip() else ""


def readme(package: str) -> tuple[list[str], dict] | None:
    """The long description's lines (no endings) and where it came from; None if unusable."""
    try:
        meta = md.metadata(package)
    except md.PackageNotFoundError:
        return None
    body = meta.get_payload() or ""
    lic = licence(meta)
    if "markdown" not in (meta.get("Description-Content-Type") or "") or not PERMISSIVE.search(lic):
        return None
    return body.replace("\r\n", "\n").split("\n"), {"package": package, "version": meta["Version"], "license": lic}


def in_code(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (its fence lines included)."""
    out, opener = [], None
    for line in lines:
        m = FENCE.match(line)
        if opener is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                opener = m.group(1)
                out.append(True)
                continue
            out.append(False)
        else:
            out.append(True)
            if m and m.group(1)[0] == opener[0] and len(m.group(1)) >= len(opener) and not m.group(2).strip():
                opener = None
    return out


def boundaries(lines: list[str], code: list[bool]) -> list[int]:
    """Line indices where a chunk may start or end: a heading or a blank line outside code blocks."""
    return [k for k in range(len(lines) + 1)
            if k == len(lines) or (not code[k] and (not lines[k].strip() or lines[k].startswith("#")))
            and (k == 0 or not code[k - 1] or FENCE.match(lines[k - 1]))]


def chunks(lines: list[str], rng: random.Random) -> list[tuple[int, int]]:
    """Consecutive 40-120-line chunks, each with a fenced code block, cut at boundaries."""
    code = in_code(lines)
    cuts = boundaries(lines, code)
    out, start = [], 0
    while True:
        target = start + rng.randint(45, 90)
        ends = [k for k in cuts if target <= k <= start + 120]
        if not ends:
            return out
        end = ends[0]
        body = lines[start:end]
        if any(FENCE.match(line) for line in body) and sum(1 for c in code[start:end] if not c) >= 15:
            out.append((start, end))
        start = end


def prose_words(line: str) -> list[re.Match]:
    """Lowercase words of six letters or more outside inline code, links, tags and URLs."""
    masked = PROTECTED.sub(lambda m: " " * len(m.group()), line)
    return list(WORD.finditer(masked))


def misspell(word: str, rng: random.Random) -> str:
    """Swap two inner letters, drop one or double one; never returns the word itself."""
    for _ in range(10):
        k = rng.randrange(1, len(word) - 2)
        kind = rng.choice(["swap", "drop", "double"])
        if kind == "swap" and word[k] != word[k + 1]:
            return word[:k] + word[k + 1] + word[k] + word[k + 2:]
        if kind == "drop":
            return word[:k] + word[k + 1:]
        if kind == "double":
            return word[:k] + word[k] + word[k:]
    return word[:1] + word[2:]


def typo_case(lines: list[str], code: list[bool], rng: random.Random) -> tuple[list[str], list[dict], str] | None:
    """2-4 spelling mistakes on distinct prose lines."""
    spots = [k for k, line in enumerate(lines) if not code[k] and prose_words(line)]
    if len(spots) < 4:
        return None
    damaged, edits = list(lines), []
    for k in sorted(rng.sample(spots, rng.randint(2, 4))):
        m = rng.choice(prose_words(lines[k]))
        wrong = misspell(m.group(), rng)
        damaged[k] = lines[k][: m.start()] + wrong + lines[k][m.end():]
        edits.append({"line": k + 1, "before": damaged[k], "after": lines[k]})
    return damaged, edits, TYPO_INSTRUCTION


def wording_case(lines: list[str], code: list[bool], rng: random.Random) -> tuple[list[str], list[dict], str] | None:
    """A requested word replacement: the word occurs 1-4 times, in prose only."""
    options = []
    for old, new in WORDING:
        pat = re.compile(rf"\b{old}\b")
        hits = [k for k, line in enumerate(lines) if pat.search(line)]
        if hits and len(hits) <= 4 and not any(code[k] for k in hits) and not any(
                re.search(rf"\b{new}\b", line) for line in lines):
            options.append((old, new, pat, hits))
    if not options:
        return None
    old, new, pat, hits = rng.choice(options)
    edits = [{"line": k + 1, "before": lines[k], "after": pat.sub(new, lines[k])} for k in hits]
    instruction = f'Replace the word "{old}" with "{new}" everywhere in the text (it appears only in prose).'
    return list(lines), edits, instruction


def link_case(lines: list[str], code: list[bool], rng: random.Random) -> tuple[list[str], list[dict], str] | None:
    """A requested link change: one URL of the prose moves to a new address."""
    urls = sorted({m.group().rstrip(".,;:") for k, line in enumerate(lines) if not code[k] for m in URL.finditer(line)})
    urls = [u for u in urls if "/" in u.split("://", 1)[1]]
    linked = [u for u in urls if any(f"]({u})" in line for line in lines)]  # a Markdown link's target
    urls = linked or urls
    if not urls:
        return None
    old = rng.choice(urls)
    path = old.split("://", 1)[1].split("/", 1)[1]
    new = f"https://docs.example.org/{path}"
    pat = re.compile(re.escape(old) + r"(?![\w/.-]*\w)")
    hits = [k for k, line in enumerate(lines) if pat.search(line)]
    if not hits or len(hits) > 4 or any(code[k] for k in hits):
        return None
    edits = [{"line": k + 1, "before": lines[k], "after": pat.sub(new, lines[k])} for k in hits]
    return list(lines), edits, f"The page moved: replace the link {old} with {new} wherever it appears."


def build(seed: int = SEED) -> list[dict]:
    """Every case, train-side packages first, then the held-out ones."""
    cases = []
    for heldout, packages in ((False, TRAIN_SIDE), (True, HELDOUT)):
        for package in packages:
            found = readme(package)
            if found is None:
                continue
            lines, source = found
            rng = random.Random(seed ^ zlib.crc32(package.encode()))
            for n, (start, end) in enumerate(chunks(lines, rng)[:CASES_PER_PACKAGE], 1):
                chunk = lines[start:end]
                while chunk and not chunk[-1].strip():
                    chunk.pop()
                code = in_code(chunk)
                kind = rng.choices(["typo", "wording", "link"], [3, 1, 1])[0]
                made = {"typo": typo_case, "wording": wording_case, "link": link_case}[kind](chunk, code, rng)
                if made is None:
                    kind, made = "typo", typo_case(chunk, code, rng)
                if made is None:
                    continue
                damaged, edits, instruction = made
                after = "\n".join(chunk) + "\n"
                before = "\n".join(damaged) + "\n"
                if kind != "typo":
                    before, after = after, "\n".join(_apply(chunk, edits)) + "\n"
                cases.append({
                    "id": f"prose_{package}_{n}", "kind": f"prose-{kind}", "path": "README.md",
                    "instruction": instruction, "before": before, "after": after, "edits": edits,
                    "lines": len(chunk), "heldout": heldout,
                    "source": source | {"lines": f"{start + 1}-{start + len(chunk)}"},
                })
    return cases


def _apply(lines: list[str], edits: list[dict]) -> list[str]:
    out = list(lines)
    for e in edits:
        out[e["line"] - 1] = e["after"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "cases" / "prose.jsonl")
    args = ap.parse_args()
    cases = build(args.seed)
    args.out.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    held = sum(c["heldout"] for c in cases)
    print(f"{args.out}: {len(cases)} cases ({held} held out)")


if __name__ == "__main__":
    main()
