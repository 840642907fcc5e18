"""Every variable the README's configuration table lists is read from the environment
somewhere in the product (settings, app code, the scripts or the Makefile): a row without
a reader documents a knob that does nothing."""

import os
import re
from pathlib import Path

from tests.processes import ROOT

# Where the product's code lives; tests and benchmarks read variables of their own.
SKIPPED_DIRECTORIES = {".venv", "tests", "bench", "migrations", "node_modules", ".git"}


def documented_variables(readme: str) -> list[str]:
    """The names in the first column of the table under `## Configuration`, in order."""
    section = readme.split("\n## Configuration", 1)[1].split("\n## ", 1)[0]
    names: list[str] = []
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names.extend(re.findall(r"`([^`]+)`", first_cell))
    return names


def product_files() -> dict[str, str]:
    """Path -> text of the product's Python and shell scripts and the Makefile."""
    found = {}
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in SKIPPED_DIRECTORIES and not d.startswith(".")
        )
        for name in sorted(files):
            if name.endswith((".py", ".sh")) or name == "Makefile":
                path = Path(directory) / name
                found[str(path.relative_to(ROOT))] = path.read_text()
    return found


# Reading a variable: in Python through django-environ (`env.int("NAME", ...)`),
# `os.environ` or `os.getenv`; in a shell script `$NAME` or `${NAME:-default}`; in the
# Makefile `$(NAME)`, which make takes from the environment.
PYTHON_READER = re.compile(
    r'\b(?:env(?:\.\w+)?\(|environ(?:\.get|\.setdefault)?[(\[]|getenv\()\s*"([A-Z0-9_]+)"'
)
SHELL_READER = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)")
MAKE_READER = re.compile(r"\$\(([A-Z][A-Z0-9_]*)\)")


def read_names(files: dict[str, str]) -> set[str]:
    names: set[str] = set()
    for path, text in files.items():
        if path.endswith(".py"):
            reader = PYTHON_READER
        elif path.endswith(".sh"):
            reader = SHELL_READER
        else:
            reader = MAKE_READER
        names.update(reader.findall(text))
    return names


def is_read(name: str, files: dict[str, str], names: set[str]) -> bool:
    """Whether the product reads `name` from the environment. A family written
    `PREFIX_<NAME>` is read when Python code picks the environment's variables by that
    prefix."""
    if "<" in name:
        prefix = re.escape(name.split("<", 1)[0])
        picks = re.compile(rf'startswith\(\s*"{prefix}"')
        return any(picks.search(text) for path, text in files.items() if path.endswith(".py"))
    return name in names


def test_every_documented_variable_is_read_from_the_environment():
    names = documented_variables((ROOT / "README.md").read_text())
    files = product_files()
    read = read_names(files)

    unread = [name for name in names if not is_read(name, files, read)]

    assert len(names) > 20, f"the configuration table was not found: {names}"
    assert unread == [], (
        "README.md lists these variables but nothing reads them from the environment "
        "(write each name in full, read it in config/settings, or drop its row)"
    )


def test_a_variable_nothing_reads_is_found_out():
    files = {
        "config/settings/base.py": 'X = env.int("READ_ONE", default=1)\nos.environ.get("R2")\n',
        "scripts/start.sh": 'DIR="${READ_THREE:-.run}"\necho "$READ_FOUR"\n',
        "Makefile": "test:\n\t$(READ_FIVE) pytest\n",
    }
    readme = (
        "# Sendrealm\n\n## Configuration\n\n| Variable | Default | Meaning |\n| --- | --- | --- |\n"
        "| `READ_ONE`, `UNREAD` | `1` | x |\n| `R2` | | y |\n"
        "| `READ_THREE`, `READ_FOUR`, `READ_FIVE` | | z |\n\n## Production\n"
        "| `LATER` | | not in the table |\n"
    )

    names = documented_variables(readme)

    assert names == ["READ_ONE", "UNREAD", "R2", "READ_THREE", "READ_FOUR", "READ_FIVE"]
    read = read_names(files)
    assert [name for name in names if not is_read(name, files, read)] == ["UNREAD"]


def test_the_files_searched_are_the_products():
    files = product_files()

    assert 'env.str("DJANGO_SECRET_KEY"' in files["config/settings/base.py"]
    assert "Makefile" in files
    assert not [path for path in files if path.startswith(("tests/", "bench/", ".venv/"))]
