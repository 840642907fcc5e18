import base64

import pytest


def basic(key: str) -> dict[str, str]:
    """The header Segment's clients send: the write key as user name, no password."""
    return {"Authorization": "Basic " + base64.b64encode(f"{key}:".encode()).decode()}


@pytest.fixture
def segment(api, world):
    """POSTs a Segment body with the project key as write key (HTTP Basic)."""

    def post(path, body, *, key="project", headers=None, **kw):
        return api.post(path, body, headers={**basic(world.keys[key]), **(headers or {})}, **kw)

    return post
