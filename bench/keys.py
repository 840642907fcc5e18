"""Credentials for benchmarks and tests: real keys, made once per run (RSA generation is slow)."""

import functools
import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pushproviders.credentials import b64url, vapid_key_pair


def _pem(key: Any) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@functools.cache
def rsa_pem() -> str:
    return _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))


@functools.cache
def apns_p8() -> str:
    return _pem(ec.generate_private_key(ec.SECP256R1()))


def p384_pem() -> str:
    return _pem(ec.generate_private_key(ec.SECP384R1()))


@functools.cache
def vapid_pair() -> tuple[str, str]:
    return vapid_key_pair()


def service_account(**changes: Any) -> dict[str, Any]:
    account = {
        "type": "service_account",
        "project_id": "demo-app-123",
        "private_key_id": "abc123",
        "private_key": rsa_pem(),
        "client_email": "push@demo-app-123.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    account.update(changes)
    return {name: value for name, value in account.items() if value is not None}


def service_account_text(**changes: Any) -> str:
    return json.dumps(service_account(**changes))


def subscription(endpoint: str = "https://updates.push.services.mozilla.com/wpush/v2/abc"):
    browser = ec.generate_private_key(ec.SECP256R1()).public_key()
    point = browser.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return {"endpoint": endpoint, "keys": {"p256dh": b64url(point), "auth": b64url(b"0" * 16)}}


APNS_TOKEN = "a" * 64


def vapid_key_pair_fresh() -> tuple[str, str]:
    return vapid_key_pair()


def p256_pem() -> str:
    """Another P-256 key: a valid .p8 that Apple does not know."""
    return _pem(ec.generate_private_key(ec.SECP256R1()))
