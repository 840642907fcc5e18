"""Clients that send part of a request body and stall. The server as production runs it
(granian, two workers, config/rsgi.py in front of Django, the production settings) keeps
answering everyone else, since a body is read before its request takes a thread, and
closes each stalled connection once it has sent nothing for REQUEST_BODY_TIMEOUT_SECONDS."""

import json
import secrets
import socket
import time
from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet
from django.conf import settings

from contacts.models import Contact
from tests.processes import request, wait_for
from tests.test_server import Granian

pytestmark = pytest.mark.django_db(transaction=True)

BODY_TIMEOUT = 3
WORKERS, THREADS = 2, 2
STALLED = 10  # more than WORKERS x THREADS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, django_db_setup: None) -> Iterator[Granian]:
    """One server for the module, with the production settings, on the test database:
    each test's keys are committed, and it reads them."""
    served = Granian(
        tmp_path_factory.mktemp("granian"),
        workers=WORKERS,
        environment={
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(32),
            "SECRETS_ENCRYPTION_KEY": Fernet.generate_key().decode(),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "CACHE_URL": settings.CACHES["default"]["LOCATION"],
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "REQUEST_BODY_TIMEOUT_SECONDS": str(BODY_TIMEOUT),
            "SERVER_THREADS": str(THREADS),
        },
    )
    wait_for(lambda: served.started() == WORKERS, timeout=60, what="the workers serving")
    wait_for(served.healthy, timeout=30, what="the server answering")
    yield served
    served.stop()
    print(served.log.read_text())  # shown when the test failed


def connect(server: Granian) -> socket.socket:
    port = int(server.base_url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=BODY_TIMEOUT + 10)


def post_head(key: str, length: int) -> bytes:
    return (
        "POST /contacts/upsert HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def answer_of(sock: socket.socket) -> tuple[int, bytes, dict]:
    """(status, head, decoded body) of the one answer on `sock`, read until the server
    closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), head.lower(), json.loads(body)


def test_stalled_bodies_hold_no_thread_and_are_closed_after_the_timeout(server, world):
    key = world.keys["project"]
    started = time.monotonic()
    stalled = []
    for _ in range(STALLED):
        sock = connect(server)
        sock.sendall(post_head(key, 1000) + b'{"email": "a@')  # 13 of 1000 bytes
        stalled.append(sock)
    time.sleep(0.5)  # every stalled request has reached the server

    health = request("GET", f"{server.base_url}/health", timeout=2)
    project = request("GET", f"{server.base_url}/project", key=key, timeout=2)

    assert health[0] == 200, health
    assert project[0] == 200, project
    assert project[1]["data"]["id"] == str(world.project.id)
    answers = [answer_of(sock) for sock in stalled]
    closed_after = time.monotonic() - started
    assert BODY_TIMEOUT - 0.5 <= closed_after <= BODY_TIMEOUT + 3
    for status, head, body in answers:
        assert status == 408
        assert b"connection: close" in head
        assert body["error"]["code"] == "request_timeout"
        assert body["error"]["details"] == f"The client sent nothing for {BODY_TIMEOUT} seconds."
    assert not Contact.objects.exists()


def test_a_body_sent_slowly_but_steadily_is_served(server, world):
    body = json.dumps({"email": "ada@example.com"}).encode()
    sock = connect(server)
    sock.sendall(post_head(world.keys["project"], len(body)))
    for start in range(0, len(body), 8):
        time.sleep(BODY_TIMEOUT / 3)
        sock.sendall(body[start : start + 8])

    status, _, answer = answer_of(sock)

    assert status == 201, answer
    assert answer["data"]["email"] == "ada@example.com"
    assert Contact.objects.filter(email="ada@example.com").exists()


def test_a_body_larger_than_any_endpoint_takes_is_refused_before_it_is_read(server, world):
    sock = connect(server)
    sock.sendall(post_head(world.keys["project"], 10**12) + b'{"email": ')

    status, head, answer = answer_of(sock)

    assert status == 413
    assert b"connection: close" in head
    assert answer["error"]["code"] == "request_too_large"


def test_requests_after_a_body_on_one_connection_are_served_in_turn(server, world):
    # A body is read up to its declared length and no further: the requests that follow it
    # on the connection, two sent with it in one write (pipelined) and one after the
    # answers, are each answered in turn on the same connection.
    key = world.keys["project"]
    emails = [f"turn-{n}@example.com" for n in range(4)]

    def post(email: str) -> bytes:
        body = json.dumps({"email": email}).encode()
        head = post_head(key, len(body)).replace(b"Connection: close", b"Connection: keep-alive")
        return head + body

    sock = connect(server)
    sock.sendall(b"".join(post(email) for email in emails[:3]))
    answers = answers_of(sock, 3)
    sock.sendall(post(emails[3]))
    answers += answers_of(sock, 1)
    sock.close()

    assert [status for status, _ in answers] == [201] * 4
    assert [answer["data"]["email"] for _, answer in answers] == emails
    assert Contact.objects.filter(email__in=emails).count() == 4


def answers_of(sock: socket.socket, count: int) -> list[tuple[int, dict]]:
    """The next `count` answers on a keep-alive connection, each read by its length."""
    data, answers = b"", []
    while len(answers) < count:
        head, found, rest = data.partition(b"\r\n\r\n")
        if found:
            fields = dict(line.lower().split(b":", 1) for line in head.split(b"\r\n")[1:])
            length = int(fields[b"content-length"])
            if len(rest) >= length:
                answers.append((int(head.split()[1]), json.loads(rest[:length])))
                data = rest[length:]
                continue
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    return answers
