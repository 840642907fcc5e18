"""Operations that can be prepared and executed. Each app registers its own at start-up.

An app names its functions by dotted path in its `apps.py` (importing its modules there
would load models before the app registry is ready); they are imported at first use, as
the hook registries of `config.registries.hooks` do. Tests may register callables directly."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

EffectsFn = Callable[..., dict[str, Any]]
ExecuteFn = Callable[..., tuple[int, Any]]


@dataclass(frozen=True)
class Operation:
    """`effects(project=, resource_id=, access=)` describes what execution would change
    (raising NotFound for an unknown resource); `execute(project=, resource_id=, access=,
    prepared=)` does it inside the executing transaction and returns (status, data).
    Either may be given as the dotted path of the function."""

    name: str
    scope: str
    effects: EffectsFn | str
    execute: ExecuteFn | str
    lifecycle: bool = True

    def describe(self, **kwargs: Any) -> dict[str, Any]:
        """What executing would change (`effects`)."""
        effects: EffectsFn = _resolved(self.effects)
        return effects(**kwargs)

    def perform(self, **kwargs: Any) -> tuple[int, Any]:
        """Runs the operation (`execute`)."""
        execute: ExecuteFn = _resolved(self.execute)
        return execute(**kwargs)


_imported: dict[str, Callable[..., Any]] = {}


def _resolved(function: Callable[..., Any] | str) -> Any:
    if not isinstance(function, str):
        return function
    if function not in _imported:
        _imported[function] = import_string(function)
    return _imported[function]


_operations: dict[str, Operation] = {}


def register(operation: Operation) -> Operation:
    _operations[operation.name] = operation
    return operation


def unregister(name: str) -> None:
    _operations.pop(name, None)


def operation_get(name: str) -> Operation | None:
    return _operations.get(name)


def operations_all() -> tuple[Operation, ...]:
    return tuple(_operations.values())
