"""Split a stream of records into batches for the bulk upload API.

The API takes at most 100 records and 1 MB of JSON per request. Works on any iterable (a generator
reading a large export, say) without loading it whole: each batch is handed on before the next one
is read. An empty input gives no batch at all, so the caller never sends an empty request.
"""

import json

MAX_RECORDS = 100
MAX_BYTES = 1_000_000


def batched(records, size=MAX_RECORDS, max_bytes=MAX_BYTES):
    """Yield lists of records, in order: at most `size` records and `max_bytes` bytes of JSON each
    (a single record larger than that goes alone); the last batch may be shorter."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    batch, used = [], 0
    for record in records:
        cost = len(json.dumps(record)) + 1  # the comma or bracket around it
        if batch and (len(batch) == size or used + cost > max_bytes):
            yield batch
            batch, used = [], 0
        batch.append(record)
        used += cost
    if batch:
        yield batch
