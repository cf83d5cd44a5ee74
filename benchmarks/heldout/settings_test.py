TEXT = """
# top
name = demo
[server]
URL = http://example.com/?a=1&b=2
port = 8080
debug = Yes
; more
[paths]
home = ${HOME}/app
"""


def test_parse(candidate):
    data = candidate(TEXT)
    assert data["default"] == {"name": "demo"}
    assert data["server"] == {"url": "http://example.com/?a=1&b=2", "port": "8080", "debug": "Yes"}
    assert data["paths"]["home"] == "${HOME}/app"
    try:
        candidate("[x]\njust words\n")
    except SettingsError:
        pass
    else:
        raise AssertionError("accepted a bad line")


def test_expand(candidate):
    assert candidate("${HOME}/app", {"HOME": "/h"}) == "/h/app"
    assert candidate("${NOPE}-x", {}) == "${NOPE}-x"
    assert candidate("a${B", {"B": "1"}) == "a${B"


def test_get_bool(candidate):
    data = parse(TEXT)
    assert candidate(data, "server", "debug") is True and candidate(data, "server", "missing", True) is True


def test_get_int(candidate):
    assert candidate(parse(TEXT), "server", "port") == 8080
