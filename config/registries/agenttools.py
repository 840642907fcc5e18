"""The tools agents call through the MCP endpoint (the app `agent`), declared by each family
beside its API.

A tool is a REST operation seen by an agent: its arguments are the operation's path ids,
query parameters and body members, flat, plus `project_id` in place of the project
header. The agent interface runs a tool by calling the REST view itself, so a tool holds
no rule of its own: validation, scopes, grants and roles, services and the answer are the
endpoint's. Its input schema is the operation's, as the OpenAPI document shows it.

Each family lists its tools in a module (`contacts/api/tools.py`: `TOOLS`, and
`EXECUTE_PATHS` for the operations it lets `prepared_action_execute` run) and names that
module here from its `AppConfig.ready()`; the module is imported at first use, as the hook
registries of `config.registries.hooks` import their handlers, since it loads serializers and
models.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

# Where `prepared_action_execute` sends an operation's preparations: the execute path with
# `{resource_id}` in braces, or `fn(project=, resource_id=) -> path` where it depends on
# the resource (an email and a push campaign share `campaigns.send`).
ExecutePath = str | Callable[..., str]

# How a tool's answer becomes its structured result: `page` is a cursor list
# (`{items, metadata}`), `all` a list the endpoint answers whole (`{items, metadata: null}`).
Listing = Literal["page", "all"]


@dataclass(frozen=True)
class AgentTool:
    """One tool: a REST operation with flat arguments.

    `path` is the operation's path with the tool's argument names in braces; every one of
    them is a UUID unless `path_values` lists its choices (or None for any text), and
    `path_names` maps an argument to the operation's own parameter name where they differ.
    `query` names the query parameters an agent may give (lists add `limit` and `after`).
    Every other argument is a member of the JSON body. `member_schemas` gives a body member
    a fuller JSON Schema than the document's (the dotted path of a function returning it),
    such as an automation definition's. The result is the endpoint's `data` as it is.

    `route` serves a tool that fronts several operations: the dotted path of
    `fn(project=, access=, arguments=) -> (operation, resource_id)`, called once the project
    is checked, naming a prepared operation whose execute path (in some module's
    `EXECUTE_PATHS`, see ExecutePath) the call then goes to. `path` only names the operation whose
    arguments the tool shows.
    """

    name: str
    description: str
    method: str
    path: str
    query: tuple[str, ...] = ()
    listing: Listing | None = None
    path_values: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    path_names: Mapping[str, str] = field(default_factory=dict)
    member_schemas: Mapping[str, str] = field(default_factory=dict)
    project_scoped: bool = True
    route: str | None = None

    @property
    def read_only(self) -> bool:
        return self.method == "GET"


_modules: list[str] = []


def register_agent_tools(module: str) -> None:
    """Names a module whose `TOOLS` (and optional `EXECUTE_PATHS`) the agent interface serves."""
    if module not in _modules:
        _modules.append(module)


def unregister_agent_tools(module: str) -> None:
    if module in _modules:
        _modules.remove(module)


def agent_tool_modules() -> tuple[str, ...]:
    return tuple(_modules)
