"""Errors of imports beyond the shared ones."""

from config.api.errors import RequestTooLarge, ServiceError


class ImportTooLarge(RequestTooLarge):
    """A file or a row count over the import limits: refused whole, nothing stored."""

    message = "The import is larger than this service accepts."


class DatabaseUnsupported(ServiceError):
    code = "not_implemented"
    status = 501
    message = "Imports need PostgreSQL; this server runs on another database."
