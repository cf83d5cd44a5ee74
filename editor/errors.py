"""The one error type users see: a one-line message and exit code 2."""


class EditError(Exception):
    """Bad input, a missing model, output that cannot become a safe diff: nothing is written."""

    exit_code = 2
