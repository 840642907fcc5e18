"""A second server process on the test database, for the tests of what one process sees
of changes another made: it reads one JSON command per line on stdin and answers one
JSON line on stdout. Its caches are its own, as another granian or Celery worker's are.

Commands: `{"op": "get", "path", "key"}` (a request through the whole stack: the answer's
status and body), `{"op": "plan", "team_id"}` (the plan terms this process acts on),
`{"op": "process"}` (event processing until nothing is due: events claimed)."""

import json
import os
import sys
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from django.test import Client  # noqa: E402

from events.services.processing import events_process_batch  # noqa: E402
from tenancy.selectors import plan_terms_get  # noqa: E402


def answer(command: dict[str, Any], client: Client) -> dict[str, Any]:
    if command["op"] == "get":
        response = client.get(command["path"], HTTP_AUTHORIZATION=f"Bearer {command['key']}")
        return {"status": response.status_code, "body": response.json()}
    if command["op"] == "plan":
        terms = plan_terms_get(team_id=command["team_id"])
        return {"name": terms.name, "quotas": dict(terms.quotas), "rate_limit": terms.rate_limit}
    if command["op"] == "process":
        claimed = 0
        while batch := events_process_batch().claimed:
            claimed += batch
        return {"claimed": claimed}
    raise ValueError(command)


if __name__ == "__main__":
    client = Client()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            reply = answer(json.loads(line), client)
        except Exception as error:  # the test reads it rather than hanging
            reply = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(reply), flush=True)
