"""Operations that can be prepared and executed. Each app registers its own at start-up."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EffectsFn = Callable[..., dict[str, Any]]
ExecuteFn = Callable[..., tuple[int, Any]]


@dataclass(frozen=True)
class Operation:
    """`effects(project=, resource_id=, access=)` describes what execution would change
    (raising NotFound for an unknown resource); `execute(project=, resource_id=, access=,
    prepared=)` does it inside the executing transaction and returns (status, data)."""

    name: str
    scope: str
    effects: EffectsFn
    execute: ExecuteFn
    lifecycle: bool = True


_operations: dict[str, Operation] = {}


def register(operation: Operation) -> Operation:
    _operations[operation.name] = operation
    return operation


def unregister(name: str) -> None:
    _operations.pop(name, None)


def operation_get(name: str) -> Operation | None:
    return _operations.get(name)
