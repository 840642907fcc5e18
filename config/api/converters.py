"""Path converters: ids in paths match in any case, as UUIDs do everywhere else."""

import uuid


class AnyCaseUUIDConverter:
    """`<uuid:...>` that also takes upper-case hex (`/contacts/3F2A...`); views get a UUID
    and reversed URLs are lower-case."""

    regex = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

    def to_python(self, value: str) -> uuid.UUID:
        return uuid.UUID(value)

    def to_url(self, value: uuid.UUID | str) -> str:
        return str(value).lower()
