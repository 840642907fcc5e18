"""Creates one API key and prints its secret (shown only this once)."""

import json
import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenancy.access import ALL_SCOPES
from tenancy.models import KeyKind, Membership, Permission, Project, Team
from tenancy.services import api_key_create


class Command(BaseCommand):
    help = "Create a project, team or personal API key and print its secret."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--kind", choices=KeyKind.values, required=True)
        parser.add_argument("--name", default="API key")
        parser.add_argument("--team", help="Team id (defaults to the project's team).")
        parser.add_argument(
            "--project",
            action="append",
            default=[],
            help="Project id. Project key: its project; team key: the default first, "
            "then the selected ones; personal key: projects to grant. Repeatable.",
        )
        parser.add_argument(
            "--all-projects", action="store_true", help="Team key over every project."
        )
        parser.add_argument("--user", help="Username of a personal key's owner.")
        parser.add_argument("--scope", action="append", default=[], choices=sorted(ALL_SCOPES))
        parser.add_argument(
            "--permission", choices=Permission.values, default=Permission.FULL_ACCESS
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        for value in [*options["project"], *([options["team"]] if options["team"] else [])]:
            try:
                uuid.UUID(value)
            except ValueError:
                raise CommandError(f"Not an id: {value!r}.") from None
        projects = list(Project.objects.filter(id__in=options["project"]))
        if len(projects) != len(set(options["project"])):
            raise CommandError("Unknown project id.")
        projects.sort(key=lambda p: options["project"].index(str(p.id)))
        team_id = options["team"] or (str(projects[0].team_id) if projects else None)
        team = Team.objects.filter(id=team_id).first() if team_id else None
        if team is None:
            raise CommandError("Name a --team or a --project.")
        if any(p.team_id != team.id for p in projects):
            raise CommandError("Every project must belong to the team.")
        kind = options["kind"]
        user = None
        if kind == KeyKind.PERSONAL:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError("A personal key needs --user naming an existing user.")
            if not Membership.objects.filter(team=team, user=user).exists():
                raise CommandError("The user of a personal key must be a member of the team.")
        elif kind == KeyKind.PROJECT and len(projects) != 1:
            raise CommandError("A project key needs exactly one --project.")
        scopes = options["scope"] or sorted(ALL_SCOPES)
        key, secret = api_key_create(
            team=team,
            kind=kind,
            name=options["name"],
            project=projects[0] if projects and kind != KeyKind.PERSONAL else None,
            projects=projects,
            all_projects=options["all_projects"],
            user=user,
            scopes=scopes,
            permission=options["permission"],
            grants={p: scopes for p in projects} if kind == KeyKind.PERSONAL else None,
        )
        if options["json"]:
            self.stdout.write(
                json.dumps({"id": str(key.id), "prefix": key.prefix, "secret": secret})
            )
        else:
            self.stdout.write(f"{key.prefix}… created. Secret (shown once): {secret}")
