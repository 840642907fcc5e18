"""What the service tells about itself when something fails: Django's debug page carries
no connection URLs."""

import re

from django.views.debug import SafeExceptionReporterFilter


class ConnectionSafeExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's debug page and error reports mask settings and environment variables that
    hold connection URLs (database, broker, cache, DSNs), not only keys and passwords."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|BROKER|DATABASE|CACHE|DSN",
        flags=re.IGNORECASE,
    )
