"""Card number check for the checkout form, before anything is sent to the payment provider.

Catches typos only (a wrong or swapped digit), with the Luhn checksum every card number carries:
from the rightmost digit (the check digit) leftwards, every second digit is doubled, and a doubled
digit above 9 counts as the sum of its two digits; the total must be a multiple of 10.
"""

import re

SEPARATORS = re.compile(r"[ -]")


def valid_card_number(number):
    """Whether `number` (spaces and dashes allowed, as people type it) looks like a real card number."""
    digits = SEPARATORS.sub("", number)
    if not digits.isdigit() or not 12 <= len(digits) <= 19:
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0
