"""The import contracts (pyproject.toml, run by `make lint`) cover every app of the service:
an app whose package is not a root package would be invisible to them."""

import re
import tomllib
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent


def _importlinter() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_every_app_of_the_service_is_a_root_package_with_a_layer():
    config = _importlinter()
    [layers] = [c for c in config["contracts"] if c["type"] == "layers"]
    layered = {
        name.strip().strip("()") for layer in layers["layers"] for name in re.split("[|:]", layer)
    }
    packages = {app.name.split(".")[0] for app in apps.get_app_configs()}
    ours = {package for package in packages if (ROOT / package / "__init__.py").is_file()}
    assert ours, "no app of the service found"
    assert ours <= set(config["root_packages"])
    assert set(config["root_packages"]) <= layered
