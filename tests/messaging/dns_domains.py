"""A real DNS server on loopback for domain verification: UDP, TXT answers from a dict."""

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.TXT
import dns.rrset


class DnsServer:
    """Answers TXT questions for the names in `records` (a name with [] has no TXT record);
    every other name is NXDOMAIN. Long values are split into 255-byte strings, as DNS
    hosting does."""

    def __init__(self) -> None:
        self.records: dict[str, list[str]] = {}
        self.questions: list[str] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def address(self) -> str:
        host, port = self._socket.getsockname()
        return f"{host}:{port}"

    def publish(self, records: list[dict]) -> None:
        """Publishes records as the API lists them (`{type, name, value}`)."""
        for record in records:
            self.records.setdefault(record["name"], []).append(record["value"])

    def start(self) -> "DnsServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                wire, client = self._socket.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            self._socket.sendto(self._answer(wire), client)

    def _answer(self, wire: bytes) -> bytes:
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True).lower()
        self.questions.append(name)
        if name not in self.records:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.TXT and self.records[name]:
            rrset = dns.rrset.RRset(question.name, dns.rdataclass.IN, dns.rdatatype.TXT)
            for value in self.records[name]:
                data = value.encode()
                strings = [data[i : i + 255] for i in range(0, len(data), 255)]
                rrset.add(
                    dns.rdtypes.ANY.TXT.TXT(dns.rdataclass.IN, dns.rdatatype.TXT, strings),
                    ttl=60,
                )
            response.answer.append(rrset)
        return response.to_wire()


@contextlib.contextmanager
def dns_server_for(settings: Any) -> Iterator[DnsServer]:
    """A running server that verification asks (DNS_RESOLVER), with short time-outs."""
    server = DnsServer().start()
    settings.DNS_RESOLVER = server.address
    settings.DNS_TIMEOUT_SECONDS = 0.5
    try:
        yield server
    finally:
        server.stop()


def point_at_a_silent_port(settings: Any) -> str:
    """DNS_RESOLVER naming a loopback port where no server listens."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        host, port = probe.getsockname()
    settings.DNS_RESOLVER = f"{host}:{port}"
    settings.DNS_TIMEOUT_SECONDS = 0.5
    return settings.DNS_RESOLVER
