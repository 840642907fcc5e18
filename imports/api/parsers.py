"""The multipart parser of CSV uploads: the import's own size limit, checked before a byte
is read; Django's upload handlers then keep a small file in memory and spill a larger one
to a temporary file, never the whole body in memory."""

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import DataAndFiles, MultiPartParser

from config.api.errors import ValidationFailed
from imports import conf
from imports.errors import ImportTooLarge

# Room for the form's other fields (the mapping) and the multipart boundaries.
FORM_OVERHEAD_BYTES = 1024 * 1024


class ImportFileParser(MultiPartParser):
    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> "DataAndFiles[Any, Any]":
        context = parser_context or {}
        meta = getattr(context.get("request"), "META", {})
        limit = conf.max_file_bytes()
        try:
            declared = int(meta.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit + FORM_OVERHEAD_BYTES:
            raise ImportTooLarge(
                details=f"A CSV file may be up to {limit} bytes; this body has {declared}."
            )
        if stream is None:
            raise ValidationFailed("The multipart body is empty.")
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError:
            raise ValidationFailed(
                "The multipart body could not be read.",
            ) from None
