DOC = """# Guide

<!-- toc -->
- [Old](#old)

## Install & Run (v2)

```bash
# not a heading
```

## Configure the `server` ##

### Options
~~~
## fake
```
still code
~~~
### Options

## Café [menu](https://example.com) in C#
See [options](#options-1) and [gone](#nowhere).
"""


def test_slugify(candidate):
    assert candidate("Install & Run (v2)") == "install--run-v2"
    assert candidate("Café *menu*") == "cafe-menu" and candidate("snake_case `code`") == "snake-case-code"


def test_headings(candidate):
    found = candidate(DOC)
    assert [(h.level, h.title, h.anchor) for h in found] == [
        (1, "Guide", "guide"), (2, "Install & Run (v2)", "install--run-v2"),
        (2, "Configure the server", "configure-the-server"), (3, "Options", "options"),
        (3, "Options", "options-1"), (2, "Café menu in C#", "cafe-menu-in-c")]
    assert found[3].line == 14


def test_render_toc(candidate):
    items = [Heading(1, "T", "t", 1), Heading(2, "A", "a", 2), Heading(3, "B", "b", 3), Heading(4, "C", "c", 4)]
    assert candidate(items) == "- [A](#a)\n  - [B](#b)"


def test_insert_toc(candidate):
    out = candidate(DOC)
    assert out.splitlines()[2:10] == ["<!-- toc -->", "- [Install & Run (v2)](#install--run-v2)",
                                      "- [Configure the server](#configure-the-server)", "  - [Options](#options)",
                                      "  - [Options](#options-1)", "- [Café menu in C#](#cafe-menu-in-c)", "",
                                      "## Install & Run (v2)"]
    assert out.endswith("[gone](#nowhere).\n") and candidate("no marker") == "no marker"


def test_broken_links(candidate):
    assert candidate(DOC) == ["old", "nowhere"]
