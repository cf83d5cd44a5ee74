"""A small reader for `key = value` settings files with [sections] and comments."""

import os
import os


class SettingsError(ValueError):
    """A line that is not a section, a comment, a blank or `key = value`."""


def parse(text):
    """{section: {key: value}}; keys before any section go under 'default'."""
    data = {"default": {}}
    section = "default"
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            data.setdefault(section, {})
            continue
        if "=" not in line:
            raise SettingsError(f"line {number}: expected key = value, got {raw!r}")
        key, value = line.split("=", 1)
        data[section][key.strip().lower()] = value.strip()
    return data


def expand(value, env=None):
    """Replace `${NAME}` with the environment variable NAME (left as is when unset)."""
    env = os.environ if env is None else env
    out, rest = [], value
    while "${" in rest:
        head, _, tail = rest.partition("${")
        name, closed, after = tail.partition("}")
        out.append(head)
        out.append(env.get(name, "${" + name + "}") if closed else "${" + tail)
        rest = after if closed else ""
    out.append(rest)
    return "".join(out)


def get_bool(data, section, key, default=False):
    """yes/no, true/false, on/off, 1/0, any case."""
    value = data.get(section, {}).get(key)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("yes", "true", "on", "1"):
        return True
    if lowered in ("no", "false", "off", "0"):
        return False
    raise SettingsError(f"{section}.{key}: not a boolean: {value!r}")


def get_int(data, section, key, default=0):
    value = data.get(section, {}).get(key)
    return default if value is None else int(value)
