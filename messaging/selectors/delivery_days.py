"""Reads of the daily delivery figures (`DeliveryDay`) across projects, for the staff
console's dashboard."""

import datetime as dt

from django.db.models import Sum

from messaging.models import DELIVERY_FIGURES, DeliveryDay


def delivery_days_totals(
    *, first: dt.date, last: dt.date, channel: str
) -> dict[dt.date, dict[str, int]]:
    """Each day from `first` to `last` (inclusive) with its figures summed over every
    project, days without any at zero. One query, a range of `delivery_day_one_per_key`
    (which leads with the date): a row per project and day that had any, never the
    messages themselves."""
    days = {
        first + dt.timedelta(days=offset): dict.fromkeys(DELIVERY_FIGURES, 0)
        for offset in range((last - first).days + 1)
    }
    rows = (
        DeliveryDay.objects.filter(date__gte=first, date__lte=last, channel=channel)
        .values("date")
        .annotate(**{figure: Sum(figure) for figure in DELIVERY_FIGURES})
        .order_by()
    )
    for row in rows:
        days[row["date"]] = {figure: int(row[figure] or 0) for figure in DELIVERY_FIGURES}
    return days
