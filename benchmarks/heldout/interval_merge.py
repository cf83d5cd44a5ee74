"""Busy blocks for a meeting room's day view: the room's bookings merged into non-overlapping blocks.

Bookings are (start, end) pairs of minutes since midnight, in any order, as the booking table
returns them. Back-to-back bookings (one ends at 10:00, the next starts at 10:00) make one block, so
the view shows no zero-minute gap between them. The free slots the booking form suggests are the
gaps between these blocks.
"""


def merge_bookings(bookings):
    """Sorted, non-overlapping (start, end) blocks covering exactly the booked time."""
    blocks = []
    for start, end in sorted(bookings):
        if end < start:
            raise ValueError(f"booking ends before it starts: {(start, end)}")
        if blocks and start <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], end)
        else:
            blocks.append([start, end])
    return [tuple(b) for b in blocks]

