"""Table of contents for the docs site: read the Markdown headings, give each an anchor, render a list.

Anchors follow the site generator's rules: lowercase, punctuation dropped, spaces to hyphens, and a
repeated anchor gets `-1`, `-2`, ... Headings inside fenced code blocks (``` or ~~~) are not headings.
"""

import re
import unicodedata
from dataclasses import dataclass
import re

ATX = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
CODE = re.compile(r"`([^`]*)`")


@dataclass
class Heading:
    level: int
    title: str
    anchor: str
    line: int


def plain(title):
    """The heading's visible text: links keep their label, inline code loses its backticks."""
    title = LINK.sub(r"\1", title)
    title = CODE.sub(r"\1", title)
    return title.replace("*", "").replace("_", " ").strip()


def slugify(title):
    """'Install & Run (v2)' -> 'install--run-v2'; accents are kept as their base letter."""
    text = unicodedata.normalize("NFKD", plain(title))
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def headings(markdown):
    """Every ATX heading outside code fences, with a unique anchor, in document order."""
    found, seen = [], {}
    fence = None
    for number, line in enumerate(markdown.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is not None:
            continue
        h = ATX.match(line)
        if not h:
            continue
        title = h.group(2)
        anchor = slugify(title)
        if anchor in seen:
            seen[anchor] += 1
            anchor = f"{anchor}-{seen[anchor]}"
        else:
            seen[anchor] = 0
        found.append(Heading(len(h.group(1)), plain(title), anchor, number))
    return found


def render_toc(items, min_level=2, max_level=3):
    """A nested Markdown list of links; levels outside [min_level, max_level] are left out."""
    lines = []
    for h in items:
        if min_level <= h.level <= max_level:
            indent = "  " * (h.level - min_level)
            lines.append(f"{indent}- [{h.title}](#{h.anchor})")
    return "\n".join(lines)


def insert_toc(markdown, marker="<!-- toc -->"):
    """The document with its TOC placed after `marker` (replacing an older one up to the blank line)."""
    lines = markdown.splitlines()
    if marker not in lines:
        return markdown
    at = lines.index(marker) + 1
    end = at
    while end < len(lines) and lines[end].lstrip().startswith("- ["):
        end += 1
    toc = render_toc(headings(markdown)).splitlines()
    return "\n".join(lines[:at] + toc + lines[end:]) + ("\n" if markdown.endswith("\n") else "")


def broken_links(markdown):
    """In-page links (`](#anchor)`) whose anchor no heading has, in order of appearance."""
    anchors = {h.anchor for h in headings(markdown)}
    targets = re.findall(r"\]\(#([^)]+)\)", markdown)
    return [t for t in targets if t not in anchors]
