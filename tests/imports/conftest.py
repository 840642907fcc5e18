"""Imports through the API: upload a CSV file (multipart) or JSON rows, preview, commit, and
drain the commit's chunks in this process as a worker would."""

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports.services.commit import import_chunks_apply_batch
from tests.conftest import Api, World


def csv_text(*lines: str) -> bytes:
    return ("\r\n".join(lines) + "\r\n").encode()


class Imports:
    """The imports API as one persona (a personal key, by default the owner's)."""

    def __init__(self, api: Api, world: World, key: str | None = None) -> None:
        self.api = api
        self.world = world
        self.key = key or world.keys["personal_owner"]
        self.project = world.project.id

    def headers(self, key: str | None = None, project: Any = "default") -> dict[str, str]:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        project = self.project if project == "default" else project
        if project is not None:
            headers["X-Service-Project-Id"] = str(project)
        return headers

    def upload_csv(
        self,
        content: bytes,
        mapping: Any,
        *,
        name: str = "contacts.csv",
        key: str | None = None,
        project: Any = "default",
        **fields: Any,
    ) -> Any:
        form = {
            "file": SimpleUploadedFile(name, content, content_type="text/csv"),
            "mapping": mapping if isinstance(mapping, str) else json.dumps(mapping),
            **fields,
        }
        return self.api.client.post(
            "/imports", form, format="multipart", headers=self.headers(key, project)
        )

    def upload_rows(
        self, rows: list[Any], mapping: Any, *, key: str | None = None, **members: Any
    ) -> Any:
        body = {"rows": rows, "mapping": mapping, **members}
        return self.api.post("/imports", body, key=key or self.key, project=self.project)

    def uploaded(self, content: bytes, mapping: Any, **fields: Any) -> dict[str, Any]:
        response = self.upload_csv(content, mapping, **fields)
        assert response.status_code == 201, response.json()
        return response.json()["data"]

    def preview(self, import_id: Any, *, key: str | None = None, body: Any = None) -> Any:
        return self.api.post(
            f"/imports/{import_id}/preview",
            {} if body is None else body,
            key=key or self.key,
            project=self.project,
        )

    def previewed(self, import_id: Any) -> dict[str, Any]:
        response = self.preview(import_id)
        assert response.status_code == 200, response.json()
        return response.json()["data"]

    def commit(
        self,
        import_id: Any,
        prepared_action_id: Any,
        idempotency_key: str = "commit-1",
        *,
        key: str | None = None,
    ) -> Any:
        return self.api.post(
            f"/imports/{import_id}/actions/commit/execute",
            {"prepared_action_id": str(prepared_action_id), "idempotency_key": idempotency_key},
            key=key or self.key,
            project=self.project,
        )

    def get(self, import_id: Any) -> dict[str, Any]:
        response = self.api.get(f"/imports/{import_id}", key=self.key, project=self.project)
        assert response.status_code == 200, response.json()
        return response.json()["data"]


@pytest.fixture
def imports(api: Api, world: World) -> Imports:
    return Imports(api, world)


def drain() -> int:
    """Applies every due chunk in this process, as a worker would; returns how many."""
    total = 0
    while claimed := import_chunks_apply_batch():
        total += claimed
    return total


def error_of(response: Any) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def issue_paths(response: Any) -> list[str]:
    return [issue["path"] for issue in response.json()["error"]["issues"]]
