"""The tools every family registered (config.registries.agenttools), loaded once per process."""

import threading
from dataclasses import dataclass
from functools import cached_property
from importlib import import_module
from typing import Any

import mcp_types as types
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from agent.schemas import input_schemas
from config.registries.agenttools import AgentTool, ExecutePath, agent_tool_modules


@dataclass(frozen=True, eq=False)
class Catalog:
    """The tools by name, and the execute endpoint of each prepared operation."""

    tools: dict[str, AgentTool]
    execute_paths: dict[str, ExecutePath]

    @cached_property
    def routes(self) -> dict[str, Any]:
        return {tool.name: import_string(tool.route) for tool in self.tools.values() if tool.route}

    @cached_property
    def schemas(self) -> dict[str, dict[str, Any]]:
        """Each tool's input schema; made at the first `tools/list` of the process."""
        return input_schemas(self.tools.values())

    @cached_property
    def tool_list(self) -> list[types.Tool]:
        """What `tools/list` answers."""
        schemas = self.schemas
        return [
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=schemas[tool.name],
                annotations=types.ToolAnnotations(
                    read_only_hint=tool.read_only,
                    destructive_hint=False if tool.read_only else None,
                    open_world_hint=False,
                ),
            )
            for tool in self.tools.values()
        ]


def _load() -> Catalog:
    tools: dict[str, AgentTool] = {}
    execute_paths: dict[str, ExecutePath] = {}
    for module_path in agent_tool_modules():
        module = import_module(module_path)
        for tool in module.TOOLS:
            if tool.name in tools:
                raise ImproperlyConfigured(f"Two agent tools are named {tool.name}.")
            tools[tool.name] = tool
        execute_paths.update(getattr(module, "EXECUTE_PATHS", {}))
    return Catalog(tools=tools, execute_paths=execute_paths)


_lock = threading.Lock()
_catalog: Catalog | None = None


def catalog() -> Catalog:
    """The registered tools; loaded at first use, after every app's `ready()` has run."""
    global _catalog
    if _catalog is None:
        with _lock:
            if _catalog is None:
                _catalog = _load()
    return _catalog


def catalog_forget() -> None:
    """Loads the registry again at the next use (tests that register tools of their own)."""
    global _catalog
    with _lock:
        _catalog = None
