"""Path converters of the messaging API."""


class EmailConverter:
    """An email address in a path segment, percent-decoded by then (`ada%40example.com`).

    The local part may hold any character but `@` (even `/`); the domain part holds no `/`,
    so a trailing slash never matches."""

    regex = r"[^@]+@[^@/]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
