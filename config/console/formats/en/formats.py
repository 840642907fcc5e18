"""The staff console's date and time formats: times to the second, in one sortable form,
so short waits and the order of steps can be seen. The API writes ISO 8601 itself and
is not affected (REST_FRAMEWORK's DATETIME_FORMAT)."""

DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
