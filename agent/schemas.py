"""Tool input schemas, made from the REST operations' entries in the OpenAPI document.

drf-spectacular documents each operation from the serializer its view validates with and
the parameters it declares; a tool's schema is that entry, flat: `project_id`, the path ids,
the query parameters and the body members side by side. So a tool and its endpoint cannot
describe different inputs, and the document's exactness (bounds, formats, `oneOf` rules,
`additionalProperties: false`) carries over. OpenAPI 3.0's `nullable` becomes JSON Schema's
`null` type, and referenced components move to `$defs`.
"""

import copy
import functools
import re
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from drf_spectacular.generators import SchemaGenerator

from config.registries.agenttools import AgentTool

PAGE_QUERY = ("limit", "after")
PROJECT_ID = {
    "type": "string",
    "format": "uuid",
    "description": (
        "The project to act on: an id from `projects_list` (the REST API's "
        "X-Service-Project-Id header)."
    ),
}
_COMPONENT = "#/components/schemas/"
_PATH_ARGUMENT = re.compile(r"\{([a-z_]+)\}")


def path_arguments(tool: AgentTool) -> tuple[str, ...]:
    """The arguments a tool's path names, in order; none for a routed tool."""
    if tool.route is not None:
        return ()
    return _path_names(tool.path)


@functools.cache
def _path_names(path: str) -> tuple[str, ...]:
    # Read on every tool call: a tool's path is read once.
    return tuple(_PATH_ARGUMENT.findall(path))


def query_arguments(tool: AgentTool) -> tuple[str, ...]:
    return tool.query + (PAGE_QUERY if tool.listing == "page" else ())


def openapi_path(tool: AgentTool) -> str:
    path = tool.path
    for argument, parameter in tool.path_names.items():
        path = path.replace(f"{{{argument}}}", f"{{{parameter}}}")
    return path


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, as `/openapi.json` serves it."""
    document: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    return document


class _Builder:
    def __init__(self, document: dict[str, Any]) -> None:
        self.components: dict[str, dict[str, Any]] = document.get("components", {}).get(
            "schemas", {}
        )
        self.defs: dict[str, Any] = {}

    def component(self, ref: str) -> dict[str, Any]:
        return self.components[ref.removeprefix(_COMPONENT)]

    def converted(self, schema: Any) -> Any:
        """`schema` as JSON Schema: refs to `$defs` (copied there), `nullable` as `null`."""
        if isinstance(schema, list):
            return [self.converted(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        result = {key: self.converted(value) for key, value in schema.items()}
        ref = result.get("$ref")
        if isinstance(ref, str) and ref.startswith(_COMPONENT):
            name = ref.removeprefix(_COMPONENT)
            result["$ref"] = f"#/$defs/{name}"
            if name not in self.defs:
                self.defs[name] = {}  # a placeholder stops recursion through cycles
                self.defs[name] = self.converted(self.components[name])
        if result.pop("nullable", False):
            if isinstance(result.get("type"), str):
                result["type"] = [result["type"], "null"]
                if "enum" in result:
                    result["enum"] = [*result["enum"], None]
            else:
                result = {"anyOf": [result, {"type": "null"}]}
        return result

    def embedded(self, schema: dict[str, Any], prefix: str) -> dict[str, Any]:
        """A standalone JSON Schema placed inside this one: its `$defs` join ours."""
        schema = copy.deepcopy(schema)
        for key in ("$schema", "$id"):
            schema.pop(key, None)
        own_defs = schema.pop("$defs", {})

        def rewrite(node: Any) -> Any:
            if isinstance(node, list):
                return [rewrite(item) for item in node]
            if not isinstance(node, dict):
                return node
            node = {key: rewrite(value) for key, value in node.items()}
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node["$ref"] = f"#/$defs/{prefix}.{ref.removeprefix('#/$defs/')}"
            return node

        for name, definition in own_defs.items():
            self.defs[f"{prefix}.{name}"] = rewrite(definition)
        embedded: dict[str, Any] = rewrite(schema)
        return embedded


def _described(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    if description and "description" not in schema:
        return {**schema, "description": description}
    return schema


def input_schema(tool: AgentTool, document: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments."""
    try:
        operation = document["paths"][openapi_path(tool)][tool.method.lower()]
    except KeyError:
        raise ImproperlyConfigured(
            f"Tool {tool.name} names {tool.method} {tool.path}, which the API does not have."
        ) from None
    builder = _Builder(document)
    properties: dict[str, Any] = {}
    required: list[str] = []
    rules: dict[str, Any] = {}
    if tool.project_scoped:
        properties["project_id"] = dict(PROJECT_ID)
        required.append("project_id")
    parameters = {(p["in"], p["name"]): p for p in operation.get("parameters", [])}
    for argument in path_arguments(tool):
        parameter = parameters[("path", tool.path_names.get(argument, argument))]
        properties[argument] = builder.converted(
            _described(parameter["schema"], parameter.get("description"))
        )
        required.append(argument)
    for name in query_arguments(tool):
        parameter = parameters.get(("query", name))
        if parameter is None:
            raise ImproperlyConfigured(f"Tool {tool.name}: {name} is no query parameter.")
        properties[name] = builder.converted(
            _described(parameter["schema"], parameter.get("description"))
        )
        if parameter.get("required"):
            required.append(name)
    body = (
        operation.get("requestBody", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema")
    )
    if body is not None:
        if "$ref" in body:
            body = builder.component(body["$ref"])
        for name, member in body.get("properties", {}).items():
            if name in properties:
                raise ImproperlyConfigured(f"Tool {tool.name}: {name} is two arguments.")
            properties[name] = builder.converted(member)
        required.extend(body.get("required", []))
        for rule in ("oneOf", "anyOf", "allOf"):
            if rule in body:
                rules[rule] = builder.converted(body[rule])
        # "At least one member" of a body: once the body sits beside `project_id` and the
        # path ids, only "one of the body's members is given" still says it.
        if body.get("minProperties") and "anyOf" not in rules:
            rules["anyOf"] = [{"required": [name]} for name in body.get("properties", {})]
    for member, function in tool.member_schemas.items():
        if member not in properties:
            raise ImproperlyConfigured(f"Tool {tool.name}: {member} is no body member.")
        description = properties[member].get("description")
        properties[member] = _described(
            builder.embedded(import_string(function)(), member), description
        )
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **rules,
    }
    if builder.defs:
        schema["$defs"] = builder.defs
    return schema


def input_schemas(tools: Iterable[AgentTool]) -> dict[str, dict[str, Any]]:
    """Every tool's input schema, by tool name (the document takes a fraction of a second
    to generate, so callers keep the result)."""
    document = openapi_document()
    return {tool.name: input_schema(tool, document) for tool in tools}
