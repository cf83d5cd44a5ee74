"""URLs for the REST client: a base URL or path plus path segments, with exactly one slash between them.

Segments come from config and from ids, so they may carry slashes of their own at either end
(`"/users/"`); those are trimmed, and empty segments skipped. The base keeps its scheme and its
leading slash (`/api` is a path on the same host), and a trailing slash on the last segment is kept,
since some endpoints need it (`/export/`). A query string goes on the last segment.
"""

from urllib.parse import quote


def url_join(base, *segments, trailing_slash=False):
    """`base` and `segments` joined by single slashes; segments are percent-encoded (ids may hold spaces)."""
    url = base.rstrip("/")
    for segment in segments:
        part = str(segment).strip("/")
        if part:
            url += "/" + quote(part, safe="/?=&")
    if trailing_slash or (segments and str(segments[-1]).endswith("/")):
        url += "/"
    return url or "/"
