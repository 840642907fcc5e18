"""The prepared operation behind preview and commit is registered when the app loads."""

from tenancy.models import Scope
from tenancy.preparedactions.registry import operation_get


def test_imports_commit_is_registered_with_the_imports_scope_when_the_app_loads():
    operation = operation_get("imports.commit")
    assert operation is not None
    assert operation.scope == Scope.IMPORTS_MANAGE
    assert operation.lifecycle is False
