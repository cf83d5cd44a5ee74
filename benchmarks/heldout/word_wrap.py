"""Word wrap for the CLI's help screens, which are printed in a fixed-width terminal.

Greedy: as many words per line as fit in `width` columns, one space between words. A word longer
than `width` (a URL, say) gets a line of its own rather than being broken. Blank lines in the input
separate paragraphs and are kept; other line breaks are just spaces.
"""


def wrap(text, width=72):
    """The lines of `text` wrapped to at most `width` columns (longer single words excepted)."""
    lines = []
    for paragraph in text.split("\n\n"):
        line = ""
        for word in paragraph.split():
            if not line:
                line = word
            elif len(line) + 1 + len(word) <= width:
                line += " " + word
            else:
                lines.append(line)
                line = word
        lines.append(line)
        lines.append("")
    return lines[:-1]
