"""Errors of imports beyond the shared ones."""

from config.api.errors import RequestTooLarge


class ImportTooLarge(RequestTooLarge):
    """A file or a row count over the import limits: refused whole, nothing stored."""

    message = "The import is larger than this service accepts."
