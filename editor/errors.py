"""The one error type users see (a one-line message and exit code 2), and the words its messages describe input with."""


class EditError(Exception):
    """Bad input, a missing model, output that cannot become a safe diff: nothing is written."""

    exit_code = 2


def few(items: list[str]) -> str:
    """A few names in a message: the first three and how many more (a long list buries the line's point)."""
    return ", ".join(items) if len(items) <= 3 else f"{', '.join(items[:3])} and {len(items) - 3} more"


def lines_named(indices: list[int] | tuple[int, ...]) -> str:
    """0-based line indices as a message names them: "line 4", "lines 4-6", "lines 2, 4-6"."""
    runs: list[list[int]] = []
    for k in sorted(indices):
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    spans = [f"{a + 1}" if a == b else f"{a + 1}-{b + 1}" for a, b in runs]
    return f"line{'s' if len(indices) > 1 else ''} {few(spans)}"


def describe_json(value: object) -> str:
    """What a parsed JSON value is, in a few words, for a message about input of the wrong shape (a server that
    answered another API's shape, a case file's field): it says what came rather than failing on it later."""
    if isinstance(value, dict):
        return f"an object with {', '.join(map(str, list(value)[:4]))}" if value else "an empty object"
    names = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null")
