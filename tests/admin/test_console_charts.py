"""The dashboard's charts: the server draws them as inline SVG (nothing loaded from
elsewhere), each with its title and figures readable as text; email deliverability per day
from the daily figures; every queue now and over 24 hours from the minute samples."""

import datetime as dt
import re
from xml.etree import ElementTree

import pytest
import redis
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.console import samples
from config.console.charts import Series, bar_chart, funnel_chart, line_chart
from config.console.samples import queue_histories, queue_samples_record
from config.console.tasks import sample_queues
from config.runtime.redisclient import redis_client
from config.workqueue.registry import work_queue_models
from events.models import Event, EventStatus
from messaging.models import DeliveryDay
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def parsed(markup: str) -> ElementTree.Element:
    """The chart's svg, out of the figure that captions it."""
    # S314: markup the tests just drew, not untrusted input.
    figure = ElementTree.fromstring(str(markup))  # noqa: S314
    assert figure.tag == "figure"
    assert figure.find("figcaption").text
    svg = figure.find(f"{SVG}svg")
    assert svg is not None
    return svg


@pytest.fixture(autouse=True)
def no_samples():
    client = redis_client()
    keys = [samples.KEY.format(label=label) for label in work_queue_models()]
    client.delete(*keys)
    yield
    client.delete(*keys)


# --- the charts ---------------------------------------------------------------------------


def test_a_bar_chart_is_svg_with_a_title_and_a_title_per_bar():
    chart = parsed(bar_chart(title="Waiting <now>", labels=["a & b", "c"], values=[3, 0]))

    assert chart.tag == f"{SVG}svg"
    assert chart.get("role") == "img"
    assert chart.find(f"{SVG}title").text == "Waiting <now>"
    assert chart.find(f"{SVG}desc").text == "a & b: 3; c: 0"
    bars = [bar.find(f"{SVG}title").text for bar in chart.iter(f"{SVG}g")]
    assert bars == ["a & b: 3", "c: 0"]
    # The y axis runs to the top value rounded up, its labels written out.
    texts = [text.text for text in chart.iter(f"{SVG}text")]
    assert "5" in texts
    assert "count" in texts


def test_a_line_chart_draws_one_line_per_series_with_a_legend():
    chart = parsed(
        line_chart(
            title="Emails",
            labels=["01-01", "01-02", "01-03"],
            series=[Series("Sent", [1, 20, 3]), Series("Opened", [0, 4, 1])],
            unit="emails",
        )
    )

    series = chart.findall(f"{SVG}g")
    assert [group.get("data-series") for group in series] == ["Sent", "Opened"]
    assert len(series[0].find(f"{SVG}polyline").get("points").split()) == 3
    points = [circle.find(f"{SVG}title").text for circle in series[1].iter(f"{SVG}circle")]
    assert points == ["Opened on 01-01: 0", "Opened on 01-02: 4", "Opened on 01-03: 1"]
    assert chart.find(f"{SVG}desc").text == "From 01-01 to 01-03; totals: Sent 24, Opened 5."


def test_a_funnel_gives_each_stage_its_share_of_the_first():
    chart = parsed(funnel_chart(title="Funnel", stages=[("Recipients", 200), ("Opened", 50)]))

    stages = [stage.find(f"{SVG}title").text for stage in chart.findall(f"{SVG}g")]
    assert stages == ["Recipients: 200 (100% of Recipients)", "Opened: 50 (25% of Recipients)"]


def test_an_empty_funnel_and_all_zero_charts_still_draw():
    assert "No data." in funnel_chart(title="Funnel", stages=[])
    assert "(—" in funnel_chart(title="Funnel", stages=[("Recipients", 0), ("Sent", 0)])
    assert parsed(bar_chart(title="Nothing", labels=[], values=[])).tag == f"{SVG}svg"


def test_lists_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="one value per label"):
        bar_chart(title="x", labels=["a"], values=[1, 2])
    with pytest.raises(ValueError, match="one value per label"):
        line_chart(title="x", labels=["a"], series=[Series("s", [1, 2])])


# --- the dashboard ------------------------------------------------------------------------


def test_the_dashboard_charts_email_figures_of_the_last_30_days(admin_client, world, clock):
    today = dt.date(2026, 1, 1)
    DeliveryDay.objects.create(
        project=world.project, date=today, channel="email", sent=10, delivered=8, bounced=2
    )
    DeliveryDay.objects.create(
        project=world.other_project, date=today, channel="email", sent=5, opened=3
    )
    # Older than the window: not shown.
    DeliveryDay.objects.create(
        project=world.project, date=today - dt.timedelta(days=30), channel="email", sent=99
    )

    content = admin_client.get("/admin/").content.decode()

    assert "Email sending and deliverability, last 30 days" in content
    assert "<title>Sent on 01-01: 15</title>" in content
    assert "<title>Delivered on 01-01: 8</title>" in content
    assert "<title>Sent on 12-03: 0</title>" in content
    assert "12-02" not in content
    assert "From 12-03 to 01-01; totals: Sent 15, Delivered 8, Bounced 2" in content
    assert "53.3% of sent" in content  # delivered: 8 of 15


def test_staff_who_may_not_see_emails_do_not_get_the_deliverability_section(client, world):
    user = UserFactory(is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename="view_event"))
    client.force_login(user)

    content = client.get("/admin/").content.decode()

    assert "Email sending and deliverability" not in content


def test_the_deliverability_chart_reads_the_figures_in_one_query(admin_client, world, clock):
    for offset in range(30):
        DeliveryDay.objects.create(
            project=world.project,
            date=dt.date(2026, 1, 1) - dt.timedelta(days=offset),
            channel="email",
            sent=offset,
        )

    with CaptureQueriesContext(connection) as queries:
        admin_client.get("/admin/")

    reads = [query["sql"] for query in queries if "messaging_deliveryday" in query["sql"]]
    assert len(reads) == 1
    assert '"messaging_email"' not in " ".join(query["sql"] for query in queries)


def test_the_dashboard_charts_the_queues_now(admin_client, world):
    for status in (EventStatus.ACCEPTED, EventStatus.ACCEPTED, EventStatus.DEAD_LETTERED):
        Event.objects.create(
            project=world.project,
            event="order.completed",
            occurred_at=T0,
            status=status,
            next_attempt_at=T0 if status == EventStatus.ACCEPTED else None,
        )

    content = admin_client.get("/admin/").content.decode()

    assert ">Waiting now, by queue</title>" in content
    assert "<title>Events: 2</title>" in content
    assert ">Dead letters now, by queue</title>" in content
    assert "<title>Events: 1</title>" in content


def test_minute_samples_make_the_24_hours_of_the_queues(admin_client, world, clock):
    Event.objects.create(
        project=world.project,
        event="order.completed",
        occurred_at=T0,
        status=EventStatus.ACCEPTED,
        next_attempt_at=T0,
    )
    assert sample_queues() == len(work_queue_models())
    clock.advance(minutes=31)
    Event.objects.create(
        project=world.project,
        event="order.completed",
        occurred_at=T0,
        status=EventStatus.DEAD_LETTERED,
    )
    queue_samples_record()

    [events] = [history for history in queue_histories() if history.label == "events.Event"]
    assert events.waiting[-2:] == [1, 1]
    assert events.dead_letters[-2:] == [0, 1]
    assert events.waiting[:-2] == [0] * 46
    content = admin_client.get("/admin/").content.decode()
    assert ">Waiting, last 24 hours (UTC, most per 30 minutes)</title>" in content
    assert re.search(r"<title>Events on \d\d:\d\d: 1</title>", content)


def test_samples_keep_a_day_of_minutes(world):
    key = samples.KEY.format(label="events.Event")
    for _ in range(3):
        queue_samples_record()
    assert redis_client().llen(key) == 3
    redis_client().rpush(key, *["0:0:0"] * samples.SAMPLES_KEPT)
    queue_samples_record()
    assert redis_client().llen(key) == samples.SAMPLES_KEPT


def test_unreadable_samples_leave_the_dashboard_up_and_say_so(admin_client, monkeypatch):
    def unreachable():
        return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)

    monkeypatch.setattr(samples, "redis_client", unreachable)

    page = admin_client.get("/admin/")

    assert page.status_code == 200
    assert "samples of the last 24 hours could not be read" in page.content.decode()
    assert ">Waiting now, by queue</title>" in page.content.decode()
