"""What kind of text a file holds, from its name alone: the fence's language tag, and whether it is prose.

Many modules ask this (the prompt's fence and wording, the prose guards, the whole-file checks), so it lives
on its own, importing nothing of the editor: before, each asked `language(path) in PROSE` of the prompt
module, two of them inside functions to dodge an import cycle.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript",
    ".tsx": "tsx", ".jsx": "jsx", ".rs": "rust", ".go": "go", ".c": "c", ".h": "c", ".cc": "cpp",
    ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php",
    ".sh": "bash", ".bash": "bash", ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".rst": "rst",
    ".adoc": "asciidoc", ".toml": "toml", ".yaml": "yaml",
    ".yml": "yaml", ".json": "json", ".html": "html", ".css": "css", ".sql": "sql", ".txt": "text",
    ".cs": "csharp", ".swift": "swift", ".lua": "lua", ".r": "r", ".scala": "scala", ".tex": "latex",
}


# Files that are prose by name alone ("README", "LICENSE-MIT", "CHANGES_1.x", "LICENSE.APACHE"; capitalised): text,
# as a .txt file is
PROSE_NAMES = {"README", "CHANGELOG", "CHANGES", "HISTORY", "NEWS", "AUTHORS", "CONTRIBUTORS", "CONTRIBUTING",
               "INSTALL", "LICENSE", "LICENCE", "COPYING", "NOTICE", "TODO", "THANKS"}


def language(path: str) -> str:
    """The fence language tag for a path; empty when unknown."""
    name = PurePosixPath(path)
    stem = re.split(r"[-_.]", name.name)[0]  # LICENSE-MIT, CHANGES_1.x, LICENSE.APACHE, COPYING.LIB
    suffix = name.suffix[1:]
    code_suffix = suffix.islower() and len(suffix) > 1  # a file type (`.scss`, `.vue`), known here or not
    named = not suffix or (("-" in name.name or "_" in name.name) and not code_suffix) or (
        stem.isupper() and suffix.isalpha() and (suffix.isupper() or suffix.istitle()))  # a suffix that names, not a
    # language: not Todo.vue, INSTALL.ps1, News-feed.scss or Todo_list.vue (a probe, session 35: edited as prose)
    if named and stem.upper() in PROSE_NAMES and stem[0].isupper() and name.suffix.lower() not in LANGUAGES:
        return "text"  # not a script `install`, nor README.py (README.md is Markdown, below)
    return LANGUAGES.get(name.suffix.lower(), "")


# Build and configuration files no fence tag names: their lines are statements, not prose (a probe, session 35: "remove
# the HEALTHCHECK" also took out a Dockerfile's `EXPOSE 8000`, and the unasked-lines check skipped the file)
CONFIG = re.compile(r"^(?:Dockerfile|Containerfile|Makefile|GNUmakefile|Jenkinsfile|Procfile|Vagrantfile|Gemfile|"
                    r"Rakefile)(?:\.[\w-]+)?$|^\.env(?:\.[\w-]+)?$|\.(?:mk|ini|cfg|conf|env|properties)$")


def is_config(path: str) -> bool:
    """Whether the file is a build or configuration file no fence tag names (a Dockerfile, a Makefile, an .ini)."""
    return bool(CONFIG.search(PurePosixPath(path).name))


PYTHON = (".py", ".pyi", ".pyw")  # suffixes `ast` reads (a `.pyw` is a Windows script)


PROSE = {"markdown", "rst", "text", "asciidoc"}


def is_prose(path: str) -> bool:
    """Whether the file is prose (Markdown, reST, AsciiDoc, plain text), which no parser checks."""
    return language(path) in PROSE
