"""The import contracts (pyproject.toml, run by `make lint`) cover every app of the service:
an app whose package is not a root package would be invisible to them."""

import ast
import re
import tomllib
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent


def _importlinter() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_every_app_of_the_service_is_a_root_package_with_a_layer():
    config = _importlinter()
    [layers] = [c for c in config["contracts"] if c["id"] == "layers"]
    layered = {
        name.strip().strip("()") for layer in layers["layers"] for name in re.split("[|:]", layer)
    }
    packages = {app.name.split(".")[0] for app in apps.get_app_configs()}
    ours = {package for package in packages if (ROOT / package / "__init__.py").is_file()}
    assert ours, "no app of the service found"
    assert ours <= set(config["root_packages"])
    assert set(config["root_packages"]) <= layered


PACKAGES = (
    "config",
    "tenancy",
    "contacts",
    "events",
    "messaging",
    "pushproviders",
    "automations",
    "imports",
    "agent",
    "tracking",
    "webhooks",
)


def _service_modules() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    ]


def test_a_hook_registry_imports_the_service_only_for_types():
    """A family's hooks.py is imported by the apps.py of higher families before any model
    loads: it imports the registry base and, under TYPE_CHECKING only, the types."""
    registries = sorted(ROOT.glob("*/hooks.py"))
    assert registries, "no hook registry found"
    for path in registries:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                assert top not in PACKAGES or node.module == "config.registries.hooks", (
                    path,
                    node.module,
                )
            elif isinstance(node, ast.Import):
                assert all(alias.name.split(".")[0] not in PACKAGES for alias in node.names)


def test_no_module_of_the_service_imports_inside_a_function():
    """A deferred import would hide a dependency from the contracts; a hook or a registry
    named by dotted path is the way up."""
    deferred = []
    for path in _service_modules():
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    deferred.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert deferred == []


def _queries_of_other_families(source: str, *, where: str) -> list[str]:
    """`Model.objects` (or `_default_manager`) in the module at `where` (its path in the
    repository) whose model was imported from the models of another top-level family."""
    tree = ast.parse(source)
    family = where.split("/")[0]
    foreign = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
        if node.module.split(".")[0] in PACKAGES
        and node.module.split(".")[0] != family
        and "models" in node.module.split(".")
    }
    return [
        f"{where}:{node.lineno} {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("objects", "_default_manager")
        and isinstance(node.value, ast.Name)
        and node.value.id in foreign
    ]


def test_no_family_queries_another_familys_models():
    """A family reads and locks another's rows through that family's selectors and
    services (`Contact.objects...` lives in contacts/ only)."""
    found = [
        query
        for path in _service_modules()
        for query in _queries_of_other_families(path.read_text(), where=str(path.relative_to(ROOT)))
    ]
    assert found == []


def test_a_query_of_another_familys_models_is_found():
    source = (
        "from contacts.models import Contact\n"
        "from events.models import Event\n\n\n"
        "def f():\n"
        "    return Contact.objects.all(), Event.objects.all()\n"
    )
    assert _queries_of_other_families(source, where="events/services/sample.py") == [
        "events/services/sample.py:6 Contact.objects"
    ]
    assert _queries_of_other_families(source, where="contacts/sample.py") == [
        "contacts/sample.py:6 Event.objects"
    ]
