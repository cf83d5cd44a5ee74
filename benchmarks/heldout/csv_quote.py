"""One CSV line for the product export, written by hand because the rows come from a template engine.

Follows RFC 4180 as spreadsheets read it: a field is quoted when it holds the delimiter, a double
quote, a line break, or spaces at either end (Excel would trim them otherwise), and a double quote
inside a quoted field is written twice. None is an empty field; numbers are written as they print.
"""

NEEDS_QUOTES = ('"', "\n", "\r")


def csv_line(fields, delimiter=","):
    """The fields as one CSV line (no line ending), quoted only where needed."""
    out = []
    for value in fields:
        text = "" if value is None else str(value)
        quoted = (
            delimiter in text
            or any(c in text for c in NEEDS_QUOTES)
            or text != text.strip(" ")
        )
        if quoted:
            text = '"' + text.replace('"', '""') + '"'
        out.append(text)
    return delimiter.join(out)
