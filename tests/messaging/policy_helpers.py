"""Reading what frequency caps have counted, for the delivery policy tests."""

from messaging.models import ContactSends


def counted_sends() -> int:
    """Messages counted against caps, over every contact and channel."""
    return sum(len(row.email) + len(row.push) for row in ContactSends.objects.all())
