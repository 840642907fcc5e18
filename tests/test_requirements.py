"""Every package the code imports by name is pinned in requirements/*.txt: one that only
comes with another (httpcore with httpx, kombu with celery) would otherwise change
version under the code when its parent does."""

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {".venv", ".git", "node_modules", "__pycache__"}
# Imported only by a test that skips without it (anymail's SES webhooks need boto3).
OPTIONAL = {"boto3"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pinned() -> set[str]:
    pins = set()
    for requirements in (ROOT / "requirements").glob("*.txt"):
        for line in requirements.read_text().splitlines():
            match = re.match(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?==", line.strip())
            if match:
                pins.add(_normalized(match.group(1)))
    return pins


def _sources() -> list[Path]:
    return [
        path
        for path in ROOT.rglob("*.py")
        if not SKIPPED.intersection(path.relative_to(ROOT).parts)
    ]


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_package_the_code_imports_is_pinned():
    ours = {path.name for path in ROOT.iterdir() if path.is_dir()} | {
        path.stem for path in ROOT.glob("*.py")
    }
    distributions = importlib.metadata.packages_distributions()
    pinned = _pinned()
    unpinned: dict[str, str] = {}
    for path in _sources():
        # A script imports its siblings by module name (scripts/run.py).
        siblings = {sibling.stem for sibling in path.parent.glob("*.py")}
        for name in _imported(path) - ours - siblings - set(sys.stdlib_module_names):
            if name in OPTIONAL or name == "__future__":
                continue
            found = distributions.get(name, [])
            if not any(_normalized(dist) in pinned for dist in found):
                unpinned.setdefault(name, str(path.relative_to(ROOT)))

    assert unpinned == {}, f"imported but not pinned in requirements/*.txt: {unpinned}"
