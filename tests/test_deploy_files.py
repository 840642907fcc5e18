"""docs/DEPLOY.md, the Procfile and docker-compose.yml describe one deployment. Docker does
not run here, so the files are read, not run: every process of the page's table runs the
same command in both files, with options the installed granian and Celery have; the
compose file sets only variables the settings read, the same for every process; every
Celery queue has a worker, given the time to stop that its queues' hard limits need; and
the figures the page quotes are in docs/PERFORMANCE.md."""

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.apps import apps as django_apps
from django.conf import settings

from config.celery import app as celery_app
from tests.processes import ROOT
from tests.test_docs import missing_references
from tests.test_settings_documented import is_read, product_files, read_names

DEPLOY = ROOT / "docs" / "DEPLOY.md"
PERFORMANCE = ROOT / "docs" / "PERFORMANCE.md"
BIN = Path(sys.executable).parent
# Names the page writes that the service's code does not define: read by the deploy
# files' shell and compose, Django's migration tools, PostgreSQL's settings. (The bench
# lines it cites are checked against docs/PERFORMANCE.md instead.)
DEPLOY_ONLY = {
    "WEB_CONCURRENCY",
    "PORT",
    "db_default",
    "AddIndexConcurrently",
    "SeparateDatabaseAndState",
    "max_connections",
    # PostgreSQL's, psycopg's and PgBouncer's own names, in the PgBouncer section.
    "_pg3_0",
    "prepare_threshold",
    "LISTEN",
    "NOTIFY",
    "synchronous_commit",
    "max_client_conn",
    "default_pool_size",
    "reserve_pool_size",
    "cl_waiting",
    "server_reset_query",
    "server_reset_query_always",
    "ignore_startup_parameters",
    "extra_float_digits",
    "query_timeout",
    "idle_transaction_timeout",
}
# A table of the product, or one of its partitions (`<table>_p<day>`, `<table>_default`).
PARTITION_SUFFIX = re.compile(r"_(p\d{8}|default)$")


def is_table_or_task(name: str) -> bool:
    """A table of the product, one of its partitions, or the name of one of its tasks."""
    tables = {model._meta.db_table for model in django_apps.get_models()}
    if name in tables or PARTITION_SUFFIX.sub("", name) in tables:
        return True
    # A worker imports every app's tasks at start.
    celery_app.loader.import_default_modules()
    return name in celery_app.tasks


# What a production process cannot start without (config/settings/production.py).
REQUIRED = {
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_SECRET_KEY",
    "SECRETS_ENCRYPTION_KEY",
    "DATABASE_URL",
    "CACHE_URL",
    "CELERY_BROKER_URL",
    "DJANGO_ALLOWED_HOSTS",
}


@dataclass(frozen=True)
class Process:
    procfile: str
    compose: str
    command: str


def section(text: str, title: str) -> str:
    """The text under `## <title>` (or `### <title>`) up to the next heading of its level."""
    match = re.search(rf"^(#+) {re.escape(title)}\n", text, re.MULTILINE)
    assert match is not None, f"no section {title!r}"
    level = match.group(1)
    rest = text[match.end() :]
    end = re.search(rf"^#{{1,{len(level)}}} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the Markdown tables in `text`, as lists of cells."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[1:] if rows else rows


def backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def doc_processes(text: str) -> list[Process]:
    """The process table of DEPLOY.md: Procfile name, compose service, command."""
    table = section(text, "Processes").split("\n### ", 1)[0]
    found = []
    for cells in table_rows(table):
        (procfile,), (compose,), (command,) = (backticked(cell) for cell in cells[:3])
        found.append(Process(procfile, compose, command))
    return found


def procfile_commands(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():
        if line.strip():
            name, sep, command = line.partition(":")
            assert sep, f"not a Procfile line: {line!r}"
            assert re.fullmatch(r"[a-z]+", name), f"not a process name: {name!r}"
            found[name] = command.strip()
    return found


def compose_command(service: dict[str, Any]) -> str:
    command = service["command"]
    return command if isinstance(command, str) else shlex.join(command)


def product_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The services that run the product's image (the others are PostgreSQL and Redis)."""
    return {name: service for name, service in compose["services"].items() if "build" in service}


def seconds(duration: str) -> float:
    """A compose duration (`90s`, `7m30s`, `1h`) in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us)", duration)
    assert "".join(n + u for n, u in parts) == duration, duration
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 0.000001}
    return sum(float(number) * units[unit] for number, unit in parts)


def queues_of(command: str) -> set[str]:
    words = shlex.split(command)
    return set(words[words.index("-Q") + 1].split(",")) if "-Q" in words else set()


def normalized(text: str) -> str:
    return " ".join(text.replace("**", "").split())


@pytest.fixture(scope="module")
def page() -> str:
    return DEPLOY.read_text()


@pytest.fixture(scope="module")
def processes(page: str) -> list[Process]:
    return doc_processes(page)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_the_procfile_runs_every_process_of_the_page_with_its_command(processes):
    procfile = procfile_commands((ROOT / "Procfile").read_text())

    assert procfile == {process.procfile: process.command for process in processes}


def test_the_compose_file_runs_every_process_of_the_page_with_its_command(processes, compose):
    services = product_services(compose)

    assert {name: compose_command(service) for name, service in services.items()} == {
        process.compose: process.command for process in processes
    }


def test_the_page_names_web_workers_beat_and_the_release_step(processes):
    commands = {process.procfile: process.command for process in processes}

    assert commands["release"] == "python manage.py migrate --noinput"
    assert commands["web"].startswith("granian --interface rsgi ")
    assert commands["web"].endswith(" config.rsgi:application")
    assert commands["beat"] == "celery -A config beat -l info"
    assert [name for name, command in commands.items() if " worker " in command] == [
        "worker",
        "sender",
        "importer",
    ]


def test_every_queue_has_a_worker_and_no_worker_names_another(processes):
    consumed: set[str] = set()
    for process in processes:
        consumed |= queues_of(process.command)

    assert consumed == {queue.name for queue in celery_app.conf.task_queues}


def test_each_worker_is_given_the_hard_time_limit_of_its_queues_to_stop(processes, compose):
    services = product_services(compose)
    for process in processes:
        queues = queues_of(process.command)
        if not queues:
            continue
        longest = max(settings.TASK_TIME_LIMITS[queue][1] for queue in queues)

        assert seconds(services[process.compose]["stop_grace_period"]) >= longest, process


def test_every_product_service_has_the_same_environment_with_what_production_requires(compose):
    environments = [service["environment"] for service in product_services(compose).values()]

    assert all(environment == environments[0] for environment in environments)
    assert set(environments[0]) >= REQUIRED
    assert environments[0]["DJANGO_SETTINGS_MODULE"] == "config.settings.production"


def test_the_compose_file_sets_only_variables_the_settings_read(compose):
    files = product_files()
    read = read_names(files)
    environment = next(iter(product_services(compose).values()))["environment"]

    unread = [name for name in environment if not is_read(name, files, read)]

    assert unread == []


def test_the_variables_that_must_agree_are_read_and_cover_the_compose_file(page, compose):
    hosts = section(page, "Settings for several hosts")
    same = [name for cells in table_rows(hosts) for name in backticked(cells[0])]
    files = product_files()
    read = read_names(files)
    environment = next(iter(product_services(compose).values()))["environment"]

    unread = [name for name in same if not is_read(name, files, read)]

    assert len(same) > 20, same
    assert unread == []
    assert set(environment) <= set(same)


def test_every_figure_the_page_quotes_is_in_the_performance_page(page):
    sizing = section(page, "How many per core")
    quoted = re.findall(r'"([^"]+)"', sizing)
    performance = normalized(PERFORMANCE.read_text())

    missing = [quote for quote in quoted if normalized(quote) not in performance]

    assert len(quoted) > 10, quoted
    assert missing == []


def test_the_redis_of_the_compose_file_has_the_settings_of_the_page(page, compose):
    block = section(page, "Redis").split("```", 2)[1]
    options = [line.split() for line in block.strip().splitlines()]
    command = compose_command(compose["services"]["redis"])

    assert options
    assert all(len(option) == 2 for option in options)
    for name, value in options:
        assert f"--{name} {value}" in command


def test_the_names_and_paths_the_page_writes_exist(page):
    bench_lines = set(backticked(PERFORMANCE.read_text()))

    missing = [
        name
        for name in missing_references(page)
        if name not in DEPLOY_ONLY and name not in bench_lines and not is_table_or_task(name)
    ]

    assert missing == []


def help_text(command: str) -> str:
    """The --help of the program and subcommand `command` runs, from this virtualenv."""
    words = shlex.split(command)
    if words[0] == "python":
        args = [sys.executable, *words[1:3], "--help"]
    elif words[0] == "celery":
        # `-A` and the like are Celery's own options, before the subcommand.
        return help_of([str(BIN / "celery"), "--help"]) + help_of(
            [str(BIN / "celery"), *words[1:4], "--help"]
        )
    else:
        args = [str(BIN / words[0]), "--help"]
    return help_of(args)


def help_of(args: list[str]) -> str:
    result = subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_command_uses_options_its_program_has(processes):
    for process in processes:
        text = help_text(process.command)
        options = [word for word in shlex.split(process.command) if word.startswith("-")]

        absent = [
            option
            for option in options
            if not re.search(rf"(^|[\s,/]){re.escape(option)}([\s,=/]|$)", text, re.MULTILINE)
        ]

        assert absent == [], process.procfile
