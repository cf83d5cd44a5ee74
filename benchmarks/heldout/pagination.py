"""Paging through search results: page numbers start at 1, as users see them."""

import math


def page_count(total, per_page):
    """How many pages `total` results fill (at least one, so an empty search still has page 1)."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return max(1, math.ceil(total / per_page))


def paginate(items, page, per_page=10):
    """The items shown on `page` (1-based); an empty list past the last page."""
    if page < 1:
        raise ValueError("pages start at 1")
    start = (page - 1) * per_page
    return items[start:start + per_page]


def page_links(page, pages, window=2):
    """Page numbers to link around the current one, with None where numbers are left out.

    >>> page_links(5, 9)
    [1, None, 3, 4, 5, 6, 7, None, 9]
    """
    shown = {1, pages} | set(range(max(1, page - window), min(pages, page + window) + 1))
    links, last = [], 0
    for number in sorted(shown):
        if number - last > 1:
            links.append(None)
        links.append(number)
        last = number
    return links


def summary(page, per_page, total):
    """The line above the results: 'Showing 11-20 of 45'."""
    if total == 0:
        return "No results"
    first = (page - 1) * per_page + 1
    last = min(page * per_page, total)
    return f"Showing {first}-{last} of {total}"
