"""A stand-in for Postmark's sending API on loopback (a real HTTP server in a thread), so
delivery through django-anymail's Postmark backend records the message id the ESP gave,
as it would in production."""

import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class PostmarkStandIn:
    url: str
    # Every accepted message: the JSON body anymail posted and the MessageID answered.
    sent: list[dict[str, Any]] = field(default_factory=list)


def postmark_stand_in(settings: Any, *, webhook_secret: str) -> Iterator[PostmarkStandIn]:
    """Runs the stand-in and points EMAIL_BACKEND and ANYMAIL at it for one test."""
    stand_in = PostmarkStandIn(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/email" or self.headers["X-Postmark-Server-Token"] != "token":
                self.send_response(401)
                self.end_headers()
                return
            message_id = str(uuid.uuid4())
            stand_in.sent.append({"body": body, "message_id": message_id})
            answer = json.dumps(
                {
                    "To": body["To"],
                    "SubmittedAt": "2026-01-01T12:00:00.0000000Z",
                    "MessageID": message_id,
                    "ErrorCode": 0,
                    "Message": "OK",
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}/"
    settings.EMAIL_URL = ""
    settings.EMAIL_BACKEND = "anymail.backends.postmark.EmailBackend"
    settings.ANYMAIL = {
        "POSTMARK_SERVER_TOKEN": "token",
        "POSTMARK_API_URL": stand_in.url,
        "WEBHOOK_SECRET": webhook_secret,
    }
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
