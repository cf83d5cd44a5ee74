"""URL slugs for blog posts: `slugify("Hello, World!")` is `hello-world`.

Accents are folded to plain letters (`Crème brûlée` → `creme-brulee`), anything else that is not a
letter or digit separates words, and long titles are cut at a word boundary so that links stay short.
"""

import re
import unicodedata

NON_WORD = re.compile(r"[^a-z0-9]+")


def slugify(title, max_length=50, separator="-"):
    """The slug of `title`: lowercase ASCII words joined by `separator`, at most `max_length` characters."""
    text = unicodedata.normalize("NFKD", title)
    text = text.encode("ascii", "ignore").decode("ascii").lower()
    slug = NON_WORD.sub(separator, text).strip(separator)
    if not slug:
        return "untitled"
    if len(slug) <= max_length:
        return slug
    cut = slug[:max_length + 1]
    if cut[-1] != separator and separator in cut:
        # the last word does not fit whole: drop it rather than leave half a word
        cut = cut[:cut.rindex(separator)]
    return cut[:max_length].rstrip(separator)
