"""A small command-line parser for the deploy scripts, which must run without third-party packages.

Options are declared up front; `parse_args` understands `--name value`, `--name=value`, boolean
flags, grouped short flags (`-xv`), a short option with its value (`-o out.txt`, `-oout.txt`),
repeatable options and `--`, after which everything is positional.
"""

from dataclasses import dataclass, field
import sys


class UsageError(Exception):
    """A command line the declared options do not accept."""


@dataclass
class Option:
    name: str
    short: str = ""
    takes_value: bool = False
    default: object = None
    repeat: bool = False
    help: str = ""

    @property
    def dest(self):
        return self.name.replace("-", "_")


@dataclass
class Parser:
    prog: str
    options: list = field(default_factory=list)

    def add(self, name, short="", takes_value=False, default=None, repeat=False, help=""):
        self.options.append(Option(name, short, takes_value, default, repeat, help))
        return self

    def find_long(self, name):
        for option in self.options:
            if option.name == name:
                return option
        raise UsageError(f"unknown option --{name}")

    def find_short(self, letter):
        for option in self.options:
            if option.short == letter:
                return option
        raise UsageError(f"unknown option -{letter}")

    def usage(self):
        """The help text: one line per option, long names aligned."""
        lines = [f"usage: {self.prog} [options] [args...]"]
        width = max((len(o.name) for o in self.options), default=0)
        for o in self.options:
            short = f"-{o.short}, " if o.short else "    "
            value = " VALUE" if o.takes_value else ""
            lines.append(f"  {short}--{o.name.ljust(width)}{value}  {o.help}".rstrip())
        return "\n".join(lines)


def store(values, option, value):
    if option.repeat:
        values.setdefault(option.dest, []).append(value)
    else:
        values[option.dest] = value


def parse_args(parser, argv=None):
    """(values, positionals): values holds every declared option, with its default when absent."""
    argv = list(sys.argv[1:] if argv is None else argv)
    values, positionals = {}, []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positionals.extend(argv[i:])
            break
        if arg.startswith("--"):
            name, eq, inline = arg[2:].partition("=")
            option = parser.find_long(name)
            if not option.takes_value:
                if eq:
                    raise UsageError(f"--{name} takes no value")
                store(values, option, True)
            elif eq:
                store(values, option, inline)
            elif i < len(argv):
                store(values, option, argv[i])
                i += 1
            else:
                raise UsageError(f"--{name} needs a value")
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for k, letter in enumerate(letters):
                option = parser.find_short(letter)
                if not option.takes_value:
                    store(values, option, True)
                    continue
                rest = letters[k + 1:]
                if rest:
                    store(values, option, rest)
                elif i < len(argv):
                    store(values, option, argv[i])
                    i += 1
                else:
                    raise UsageError(f"-{letter} needs a value")
                break
        else:
            positionals.append(arg)
    for option in parser.options:
        if option.dest not in values:
            values[option.dest] = [] if option.repeat else option.default
    return values, positionals


def deploy_parser():
    """The parser `deploy.py` uses."""
    return (Parser("deploy")
            .add("verbose", "v", help="say more")
            .add("dry-run", "n", help="print the steps, change nothing")
            .add("target", "t", takes_value=True, default="staging", help="where to deploy")
            .add("exclude", "x", takes_value=True, repeat=True, help="skip a service"))
