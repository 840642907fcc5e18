"""Creating an import: a CSV file read as a stream, or JSON rows, mapped row by row and
stored with COPY in the same transaction as the import, so a refused upload stores
nothing. Of a CSV file, no more than one record and the sample used for detection are
ever in memory (JSON rows arrive parsed, under their own smaller bounds)."""

import codecs
import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from django.db import connection, transaction

from config.api.errors import Issue, ValidationFailed
from imports import conf
from imports.errors import ImportTooLarge
from imports.mapping import (
    ColumnMapping,
    MappedRow,
    fields_json,
    mapping_parsed,
    row_mapped,
    unknown_columns_issues,
)
from imports.models import (
    AutomationEffects,
    Import,
    ImportRow,
    ImportSource,
    RowError,
    RowStatus,
)
from tenancy.models import Project

# Bytes looked at to detect binary content and the delimiter.
SAMPLE_BYTES = 64 * 1024
# Bytes decoded per step while checking that a file is valid in an encoding.
SCAN_BYTES = 1024 * 1024
DELIMITERS = ",;\t|"
# One row (header included) is read whole: at most this many characters.
MAX_RECORD_CHARS = 1024 * 1024
# Header names kept on the import (the file may have more; only mapped ones matter).
MAX_COLUMNS_KEPT = 1000
# Control characters other than tab, newlines and form feed: text files have none.
_CONTROL = frozenset(chr(code) for code in range(32)) - {"\t", "\n", "\r", "\x0c"}


def _file_issue(message: str, code: str, path: str = "file") -> ValidationFailed:
    return ValidationFailed(message, issues=[Issue(code=code, path=path, message=message)])


# --- reading a CSV file ---------------------------------------------------------------------


def _decodes(stream: IO[bytes], encoding: str) -> bool:
    """Whether the whole stream is valid text in `encoding` (read in steps, then rewound)."""
    decoder = codecs.getincrementaldecoder(encoding)()
    stream.seek(0)
    try:
        while chunk := stream.read(SCAN_BYTES):
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    finally:
        stream.seek(0)
    return True


def encoding_detected(stream: IO[bytes]) -> str:
    """UTF-8 (with or without its BOM) or UTF-16 with a BOM; else Windows-1252 when the
    file decodes as that, else Latin-1 (which decodes anything)."""
    head = stream.read(4)
    stream.seek(0)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if _decodes(stream, "utf-8"):
        return "utf-8"
    if _decodes(stream, "cp1252"):
        return "cp1252"
    return "latin-1"


def _text_codec(name: str) -> str:
    try:
        # Text codecs only: bytes-to-bytes ones (`bz2_codec`) raise LookupError here.
        "".encode(name)
        return codecs.lookup(name).name
    except (LookupError, UnicodeError):
        raise _file_issue("Not a known text encoding.", "invalid_choice", "encoding") from None


def _sample_text(stream: IO[bytes], encoding: str) -> str:
    raw = stream.read(SAMPLE_BYTES)
    stream.seek(0)
    return raw.decode(encoding, errors="replace")


def _looks_binary(sample: str) -> bool:
    if "\x00" in sample:
        return True
    controls = sum(1 for char in sample if char in _CONTROL)
    return controls > max(8, len(sample) // 100)


def _delimiter_sniffed(sample: str) -> str:
    # The sample may end inside a row; the sniffer reads whole lines only.
    lines = sample.splitlines()[:50]
    if len(lines) > 1:
        lines = lines[:-1]
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


@dataclass
class CsvSource:
    """How a CSV file is read, and its rows as column -> cell."""

    stream: IO[bytes]
    encoding: str
    delimiter: str
    columns: list[str] = field(default_factory=list)


def csv_opened(stream: IO[bytes], *, encoding: str | None, delimiter: str | None) -> CsvSource:
    """Detects (or takes) the encoding and delimiter; refuses binary content."""
    chosen = _text_codec(encoding) if encoding else encoding_detected(stream)
    sample = _sample_text(stream, chosen)
    if _looks_binary(sample):
        raise _file_issue("The file is not a CSV file (it holds binary data).", "not_csv")
    if delimiter is None:
        delimiter = _delimiter_sniffed(sample.lstrip("\ufeff"))
    return CsvSource(stream=stream, encoding=chosen, delimiter=delimiter)


class _RecordTooLong(Exception):
    pass


class _BoundedLines:
    """The lines of a text stream for the CSV reader, with a bound on one record: the
    reader holds a whole record in memory, and quoted cells may join lines without end."""

    def __init__(self, text: IO[str], limit: int) -> None:
        self.text = text
        self.limit = limit
        # Characters read since the reader last finished a record.
        self.pending = 0

    def __iter__(self) -> Iterator[str]:
        while line := self.text.readline(self.limit + 1):
            self.pending += len(line)
            if self.pending > self.limit:
                raise _RecordTooLong()
            yield line


def _csv_rows(source: CsvSource, mapping: ColumnMapping) -> Iterator[dict[str, str] | None]:
    """The data rows as {mapped column: cell}; None for a row with more cells than the
    header (its values cannot be placed). Blank lines are skipped. Reads the header first
    (into `source.columns`) and checks that every mapped column is in it."""
    text = io.TextIOWrapper(source.stream, encoding=source.encoding, newline="")
    lines = _BoundedLines(text, MAX_RECORD_CHARS)
    try:
        reader = csv.reader(lines, delimiter=source.delimiter)
        try:
            try:
                header = next(reader)
            except StopIteration:
                raise _file_issue(
                    "The file is empty: it needs a header row.", "no_header"
                ) from None
            source.columns = [name.strip() for name in header]
            if not any(source.columns):
                raise _file_issue("The first row (the header) names no column.", "no_header")
            _check_header(source.columns, mapping)
            positions = [(column, source.columns.index(column)) for column in mapping.columns]
            width = len(source.columns)
            for cells in reader:
                lines.pending = 0
                if not any(cell.strip() for cell in cells):
                    continue
                if len(cells) > width and any(cell.strip() for cell in cells[width:]):
                    yield None
                    continue
                yield {
                    column: cells[index] if index < len(cells) else ""
                    for column, index in positions
                }
        except csv.Error as error:
            raise _file_issue(
                f"The file could not be read as CSV at line {reader.line_num}: {error}.",
                "not_csv",
            ) from None
        except _RecordTooLong:
            raise _file_issue(
                f"A row from line {reader.line_num} on is longer than {MAX_RECORD_CHARS} "
                "characters (an unclosed quote?).",
                "not_csv",
            ) from None
        except UnicodeDecodeError:
            raise _file_issue(
                f"The file is not valid {source.encoding} text.", "invalid_encoding"
            ) from None
    finally:
        # The upload owns the stream; the wrapper must not close it.
        text.detach()


def _check_header(columns: list[str], mapping: ColumnMapping) -> None:
    issues = unknown_columns_issues(mapping, set(columns))
    for column in mapping.columns:
        if columns.count(column) > 1:
            issues.append(
                Issue(
                    "ambiguous_column",
                    f"mapping.{column}",
                    "The header names this column more than once.",
                )
            )
    if issues:
        raise ValidationFailed("The mapping names columns the file does not have.", issues=issues)


# --- storing rows ---------------------------------------------------------------------------

_COPY_SQL = (
    "COPY {table} (import_id, row_number, status, error_code, email, external_id, fields, "
    "audiences, topics) FROM STDIN"
)

# A later row with the identity (or the external id) of an earlier valid row is a
# duplicate; like every invalid row it keeps nothing but where it is and why.
_DUPLICATES_SQL = """
UPDATE {table} AS r
SET status = %(invalid)s, error_code = %(duplicate)s, email = NULL, external_id = NULL,
    fields = '{{}}', audiences = '[]', topics = '[]'
FROM (
    SELECT id FROM (
        SELECT id, email, external_id,
            row_number() OVER (PARTITION BY email ORDER BY row_number) AS by_email,
            row_number() OVER (PARTITION BY external_id ORDER BY row_number) AS by_external_id
        FROM {table} WHERE import_id = %(import_id)s AND status = %(valid)s
    ) ranked
    WHERE (email IS NOT NULL AND by_email > 1)
       OR (external_id IS NOT NULL AND by_external_id > 1)
) AS later
WHERE r.id = later.id
"""


class _RowSink:
    """Maps rows and streams them into the import's rows with COPY."""

    def __init__(self, record: Import, mapping: ColumnMapping, *, typed: bool) -> None:
        self.record = record
        self.mapping = mapping
        self.typed = typed
        self.policy = record.email_normalization
        self.max_rows = conf.max_rows()
        self.max_names = conf.max_names()
        self.names: dict[str, dict[str, str]] = {"audiences": {}, "topics": {}}
        self.total = 0
        self.valid = 0

    def write(self, rows: Iterable[Mapping[str, Any] | None]) -> None:
        table = ImportRow._meta.db_table
        import_id = self.record.id
        with connection.cursor() as cursor:
            raw_cursor: Any = cursor.cursor
            with raw_cursor.copy(_COPY_SQL.format(table=table)) as copy:
                for values in rows:
                    self.total += 1
                    if self.total > self.max_rows:
                        raise ImportTooLarge(
                            details=f"An import holds at most {self.max_rows} rows."
                        )
                    mapped = self._mapped(values)
                    if mapped.valid:
                        self.valid += 1
                        copy.write_row(
                            (
                                import_id,
                                self.total,
                                RowStatus.VALID,
                                None,
                                mapped.email,
                                mapped.external_id,
                                fields_json(mapped.fields),
                                json.dumps(mapped.audiences) if mapped.audiences else "[]",
                                json.dumps(mapped.topics) if mapped.topics else "[]",
                            )
                        )
                    else:
                        # Nothing of an invalid row is kept but where it is and why.
                        copy.write_row(
                            (
                                import_id,
                                self.total,
                                RowStatus.INVALID,
                                mapped.error_code,
                                None,
                                None,
                                "{}",
                                "[]",
                                "[]",
                            )
                        )

    def _mapped(self, values: Mapping[str, Any] | None) -> MappedRow:
        if values is None or not isinstance(values, Mapping):
            return MappedRow(error_code=RowError.INVALID_VALUE)
        mapped = row_mapped(values, self.mapping, email_policy=self.policy, typed=self.typed)
        if mapped.valid and not (
            self._names_fit("audiences", mapped.audiences)
            and self._names_fit("topics", mapped.topics)
        ):
            return MappedRow(error_code=RowError.INVALID_VALUE)
        return mapped

    def _names_fit(self, kind: str, names: list[str]) -> bool:
        """Whether the import may name these too (at most `max_names` distinct ones)."""
        known = self.names[kind]
        new = [name for name in names if name.lower() not in known]
        if len(known) + len(new) > self.max_names:
            return False
        for name in new:
            known[name.lower()] = name
        return True

    def finish(self) -> None:
        """Marks duplicates and records the totals on the import."""
        with connection.cursor() as cursor:
            cursor.execute(
                _DUPLICATES_SQL.format(table=ImportRow._meta.db_table),
                {
                    "import_id": self.record.id,
                    "valid": RowStatus.VALID,
                    "invalid": RowStatus.INVALID,
                    "duplicate": RowError.DUPLICATE_ROW,
                },
            )
            duplicates = cursor.rowcount
        record = self.record
        record.total_rows = self.total
        record.valid_rows = self.valid - duplicates
        record.invalid_rows = self.total - record.valid_rows
        record.audience_names = sorted(self.names["audiences"].values())
        record.topic_names = sorted(self.names["topics"].values())
        record.save()


def _import_started(
    *,
    project: Project,
    source: str,
    mapping: dict[str, Any],
    automation_effects: str,
    **extra: Any,
) -> Import:
    return Import.objects.create(
        project=project,
        source=source,
        mapping=mapping,
        automation_effects=automation_effects or AutomationEffects.SUPPRESS,
        email_normalization=project.email_normalization,
        **extra,
    )


def import_create_from_csv(
    *,
    project: Project,
    file: IO[bytes],
    size: int,
    filename: str | None,
    mapping: Any,
    automation_effects: str = AutomationEffects.SUPPRESS,
    encoding: str | None = None,
    delimiter: str | None = None,
) -> Import:
    """An import of a CSV file with a header row: read as a stream (the file may be a
    temporary file on disk), each row mapped and stored. Bad rows are stored as invalid;
    a file that cannot be read as CSV, or a mapping that does not fit its header, is a
    400 and stores nothing."""
    if size > conf.max_file_bytes():
        raise ImportTooLarge(details=f"A CSV file may be up to {conf.max_file_bytes()} bytes.")
    parsed = mapping_parsed(mapping)
    file.seek(0)
    source = csv_opened(file, encoding=encoding, delimiter=delimiter)
    with transaction.atomic():
        record = _import_started(
            project=project,
            source=ImportSource.CSV,
            mapping=dict(mapping),
            automation_effects=automation_effects,
            filename=(filename or "")[:255] or None,
            encoding=source.encoding,
            delimiter=source.delimiter,
        )
        sink = _RowSink(record, parsed, typed=False)
        sink.write(_csv_rows(source, parsed))
        record.columns = source.columns[:MAX_COLUMNS_KEPT]
        sink.finish()
    return record


def import_create_from_rows(
    *,
    project: Project,
    rows: list[Any],
    mapping: Any,
    automation_effects: str = AutomationEffects.SUPPRESS,
) -> Import:
    """An import of JSON rows (objects of column -> value). A row that is not an object
    is an invalid row; a mapped column that no row has is a 400."""
    parsed = mapping_parsed(mapping)
    columns: dict[str, None] = {}
    for row in rows:
        if isinstance(row, Mapping):
            columns.update(dict.fromkeys(key for key in row if isinstance(key, str)))
    issues = unknown_columns_issues(parsed, set(columns))
    if issues:
        raise ValidationFailed("The mapping names columns no row has.", issues=issues)
    with transaction.atomic():
        record = _import_started(
            project=project,
            source=ImportSource.JSON,
            mapping=dict(mapping),
            automation_effects=automation_effects,
            columns=list(columns)[:MAX_COLUMNS_KEPT],
        )
        sink = _RowSink(record, parsed, typed=True)
        sink.write(rows)
        sink.finish()
    return record
