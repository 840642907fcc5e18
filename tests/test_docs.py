"""docs/ARCHITECTURE.md names only what exists: every file path and every code name it
writes in backticks is checked against the tree, so a rename that leaves the page behind
fails the suite.

What counts (everything else in backticks, such as SQL, commands, URLs, placeholders like
`<family>/timeline.py` and the call shapes `fn(event=..., contact=...)`, is prose):
- a path: a span with a `/` whose first part is a top-level entry of the repository
  (`events/services/system.py`, `config/workqueue/`); it must exist;
- a dotted name starting with one of the service's packages (`config.workqueue`,
  `events.services.system.emit_system_events`, with or without a call after it); the
  module must import and each name after it must be an attribute;
- a code name: a snake_case name with an underscore, a CamelCase name or an UPPER_CASE
  name of two or more letters, alone or as `Class.attribute`, with or without a call after
  it; it must be defined in the service's code (a function, a class, an assigned name or
  attribute; an UPPER_CASE name may also be a setting or environment variable the code
  reads by string), or be one of the library and SQL names listed in `ELSEWHERE`."""

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

# The service's code, where the names the page uses are defined.
from tests.test_architecture import PACKAGES

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
# Names the page uses that belong to a library, to SQL or to a tool, not to the service.
ELSEWHERE = {
    # Django
    "AppConfig",
    "ImproperlyConfigured",
    "Model",
    "TextChoices",
    "objects",
    "on_delete",
    "prefetch_related",
    "transaction",
    "atomic",
    "on_commit",
    "ready",
    "__init__",
    # Celery, typing, import-linter
    "shared_task",
    "TYPE_CHECKING",
    "root_packages",
    # SQL
    "COPY",
    "TRUNCATE",
}

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_CALL = re.compile(r"\(.*\)$")
_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")
_FILE = re.compile(r"\.(py|toml|md|json|txt|html)$")
_PATH = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?")


def _is_code_name(name: str) -> bool:
    return (
        ("_" in name.strip("_") and name.lower() == name)
        or bool(re.fullmatch(r"_?[A-Z][a-z0-9]+[A-Z]\w*", name))
        or bool(re.fullmatch(r"[A-Z][A-Z0-9]*_?[A-Z0-9_]+", name))
        or name.startswith("__")
    )


@functools.cache
def defined_names() -> frozenset[str]:
    """Every function, class, assigned name and attribute of the service's code, and the
    UPPER_CASE strings it reads (settings and environment variables)."""
    names: set[str] = set()
    files = [path for package in PACKAGES for path in (ROOT / package).rglob("*.py")]
    for path in files:
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"[A-Z][A-Z0-9_]+", node.value)
            ):
                names.add(node.value)
    return frozenset(names)


def _top_level() -> set[str]:
    return {entry.name for entry in ROOT.iterdir() if not entry.name.startswith(".")}


def _dotted_resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def missing_references(text: str) -> list[str]:
    """The paths and names in backticks in `text` (a page of Markdown) that the tree does
    not have, in the order the page gives them."""
    missing: list[str] = []
    for span in _SPAN.findall(_FENCE.sub("", text)):
        span = span.strip()
        if "/" in span:
            checked = _PATH.fullmatch(span) and span.split("/")[0] in _top_level()
            if checked and not (ROOT / span).exists():
                missing.append(span)
            continue
        bare = _CALL.sub("", span).removesuffix("...")
        if _DOTTED.fullmatch(bare) and bare.split(".")[0] in PACKAGES:
            if not _dotted_resolves(bare):
                missing.append(span)
        elif _NAME.fullmatch(bare) and not _FILE.search(bare):
            parts = bare.split(".")
            if len(parts) == 1 and not _is_code_name(bare):
                continue
            if any(part not in defined_names() and part not in ELSEWHERE for part in parts):
                missing.append(span)
    return missing


def test_every_path_and_name_the_architecture_page_writes_exists():
    assert missing_references(ARCHITECTURE.read_text()) == []


@pytest.mark.parametrize(
    "span",
    [
        "events/services/nowhere.py",
        "config/noroom/",
        "config.workqueue.nowhere",
        "events.services.system.emit_system_events_now",
        "emit_system_events_now",
        "events_wake_soon()",
        "WorkQueue.reclaim",
        "NO_SUCH_SETTING",
        "NeverDefined",
    ],
)
def test_a_path_or_name_that_is_gone_is_reported(span):
    assert missing_references(f"The writer is `{span}`, see `config/registries/outbox.py`.") == [
        span
    ]


@pytest.mark.parametrize(
    "span",
    [
        "<family>/timeline.py",
        "POST /templates/{id}/test",
        "fn(event=..., contact=...)",
        "SELECT ... FOR UPDATE SKIP LOCKED",
        "sendrealm.contact.created",
        "make lint",
        "%b",
        "weak=False",
        "api/views.py",
        "pyproject.toml",
        'include("contacts.api.urls")',
    ],
)
def test_prose_in_backticks_is_not_taken_for_a_name(span):
    assert missing_references(f"As `{span}` says.") == []
