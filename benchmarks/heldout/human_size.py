"""File sizes for people, as the backup report prints them: `1.5 MB`, `820 kB`, `3 B`.

Decimal units (1 kB = 1000 bytes), like the storage provider's invoices, or binary ones (1 KiB =
1024 bytes) with `binary=True`, like `du`. One decimal place below 10 units, none above, so a column
of sizes stays short. Sizes can be negative: the report also shows how much each folder grew or shrank.
"""

DECIMAL = ["B", "kB", "MB", "GB", "TB", "PB"]
BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]


def human_size(num_bytes, binary=False):
    """`num_bytes` with the largest unit that keeps the number at least 1, e.g. `-2.5 GB`."""
    base, units = (1024, BINARY) if binary else (1000, DECIMAL)
    sign = "-" if num_bytes < 0 else ""
    size = abs(num_bytes)
    for unit in units:
        if size < base or unit == units[-1]:
            break
        size /= base
    if unit == "B":
        return f"{sign}{size} B"
    digits = 1 if size < 10 else 0
    return f"{sign}{size:.{digits}f} {unit}"
