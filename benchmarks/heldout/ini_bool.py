"""On/off settings from the INI config file and from environment variables (`APP_DEBUG=yes`).

People write booleans in many ways, so the usual spellings are accepted in any case and with stray
spaces. A setting left empty (`debug =`, or `APP_DEBUG=` in a shell) means "not set": it takes the
default like a missing one. Anything else is a mistake worth stopping on, not a silent False.
"""

TRUE = {"1", "yes", "y", "true", "on"}
FALSE = {"0", "no", "n", "false", "off"}


def parse_bool(value, default=False, name="setting"):
    """`value` (a string from the file or the environment, or None when absent) as True or False."""
    if value is None or not value.strip():
        return default
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise ValueError(f"{name}: expected yes/no, true/false, on/off or 1/0, got {value!r}")
