"""`GET /health`: is the database reachable, is the broker reachable."""

import logging

from django.db import connection
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.envelope import enveloped, error_body
from config.api.negotiation import MethodBeforeNegotiation
from config.api.serializers import ErrorEnvelopeSerializer
from config.celery import app as celery_app

logger = logging.getLogger(__name__)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        logger.warning("Health check: database unreachable", exc_info=True)
        return False


def _broker_ok() -> bool:
    try:
        # One quick attempt: a health probe must answer fast, not wait out retry intervals.
        with celery_app.connection_for_write(connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
        return True
    except Exception:
        logger.warning("Health check: broker unreachable", exc_info=True)
        return False


class HealthView(MethodBeforeNegotiation, APIView):
    authentication_classes = []
    permission_classes = [AllowAny]

    @extend_schema(
        auth=[],
        responses={
            200: inline_serializer(
                "Health", {"database": serializers.CharField(), "broker": serializers.CharField()}
            ),
            503: OpenApiResponse(
                ErrorEnvelopeSerializer, description="`service_unavailable`: `details` names it."
            ),
        },
    )
    def get(self, request: Request) -> Response:
        database, broker = _database_ok(), _broker_ok()
        if database and broker:
            return Response({"database": "ok", "broker": "ok"})
        down = [name for name, ok in (("database", database), ("broker", broker)) if not ok]
        body = error_body(
            status=503,
            code="service_unavailable",
            message="A service the API depends on is unreachable.",
            details=", ".join(f"{name}: unreachable" for name in down),
        )
        return enveloped(body, status=503)
