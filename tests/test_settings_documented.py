"""Every variable the README's configuration table lists is read from the environment
somewhere in the product (settings, app code or `make run`'s script): a row without a
reader documents a knob that does nothing."""

import functools
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


def product_source() -> str:
    texts = []
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in SKIPPED_DIRECTORIES and not d.startswith(".")
        )
        texts.extend(
            (Path(directory) / name).read_text() for name in sorted(files) if name.endswith(".py")
        )
    return "\n".join(texts)


# Reading a variable: django-environ (`env.int("NAME", ...)`), `os.environ` or `os.getenv`.
READER = re.compile(
    r'\b(?:env(?:\.\w+)?\(|environ(?:\.get|\.setdefault)?[(\[]|getenv\()\s*"([A-Z0-9_]+)"'
)


def is_read(name: str, source: str) -> bool:
    """Whether `source` reads `name` from the environment. A family written `PREFIX_<NAME>`
    is read when the code picks the environment's variables by that prefix."""
    if "<" in name:
        prefix = re.escape(name.split("<", 1)[0])
        return re.search(rf'startswith\(\s*"{prefix}"', source) is not None
    return name in read_names(source)


@functools.cache
def read_names(source: str) -> frozenset[str]:
    return frozenset(READER.findall(source))


def test_every_documented_variable_is_read_from_the_environment():
    names = documented_variables((ROOT / "README.md").read_text())
    source = product_source()

    unread = [name for name in names if not is_read(name, source)]

    assert len(names) > 20, f"the configuration table was not found: {names}"
    assert unread == [], (
        "README.md lists these variables but nothing reads them from the environment "
        "(write each name in full, read it in config/settings, or drop its row)"
    )


def test_a_variable_nothing_reads_is_found_out():
    source = 'X = env.int("READ_ONE", default=1)\nos.environ.get("READ_TWO")\n'
    readme = (
        "# Sendrealm\n\n## Configuration\n\n| Variable | Default | Meaning |\n| --- | --- | --- |\n"
        "| `READ_ONE`, `UNREAD` | `1` | x |\n| `READ_TWO` | | y |\n\n## Production\n"
        "| `LATER` | | not in the table |\n"
    )

    names = documented_variables(readme)

    assert names == ["READ_ONE", "UNREAD", "READ_TWO"]
    assert [name for name in names if not is_read(name, source)] == ["UNREAD"]


def test_the_source_searched_is_the_products():
    source = product_source()

    assert 'env.str("DJANGO_SECRET_KEY"' in source
    assert "def test_every_documented_variable_is_read" not in source
