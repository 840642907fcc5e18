"""Creates (or reuses) a demo team with two projects and prints working keys."""

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from tenancy.access import ALL_SCOPES
from tenancy.models import KeyKind, Membership, Permission, Plan, Project, Role, Team
from tenancy.services import api_key_create, team_plan_set

DEMO_TEAM = "Demo team"
DEMO_OWNER = "owner@example.com"
PROJECT_NAMES = ("Demo project", "Second project")
# The demo team's plan: no quotas, the default rate limit (CONTRACT section 16).
DEMO_PLAN = "Unlimited"


class Command(BaseCommand):
    help = "Create or reuse the demo team, its owner and two projects; print fresh keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(name=DEMO_TEAM).order_by("created_at").first()
        if team is None:
            team = Team.objects.create(name=DEMO_TEAM, messaging_rollout=True)
        elif not team.messaging_rollout:
            team.messaging_rollout = True
            team.save(update_fields=["messaging_rollout", "updated_at"])
        plan, _ = Plan.objects.get_or_create(name=DEMO_PLAN)
        team_plan_set(team=team, plan=plan)
        # The team's first two projects, whatever they are called by now: a rename through
        # PATCH /project must not make the next run create new ones.
        projects = list(team.projects.order_by("created_at", "id")[:2])
        for name in PROJECT_NAMES[len(projects) :]:
            projects.append(Project.objects.create(team=team, name=name))
        project, other = projects
        user_model = get_user_model()
        owner, created = user_model.objects.get_or_create(
            username=DEMO_OWNER, defaults={"email": DEMO_OWNER}
        )
        if created:
            owner.set_unusable_password()
            owner.save()
        Membership.objects.update_or_create(team=team, user=owner, defaults={"role": Role.OWNER})

        def key(**kwargs: Any) -> str:
            return api_key_create(team=team, **kwargs)[1]

        keys = {
            "project": key(kind=KeyKind.PROJECT, name="Demo project key", project=project),
            "team": key(
                kind=KeyKind.TEAM,
                name="Demo team key",
                project=project,
                projects=[project, other],
            ),
            "personal": key(
                kind=KeyKind.PERSONAL,
                name="Demo owner personal key",
                user=owner,
                scopes=ALL_SCOPES,
                grants={project: ALL_SCOPES, other: ALL_SCOPES},
            ),
            "read_only": key(
                kind=KeyKind.PROJECT,
                name="Demo read-only key",
                project=project,
                permission=Permission.READ_ONLY,
            ),
            "sending": key(
                kind=KeyKind.PROJECT,
                name="Demo sending key",
                project=project,
                permission=Permission.SENDING_ACCESS,
            ),
            "other_project": key(kind=KeyKind.PROJECT, name="Second project key", project=other),
        }
        result = {
            "team_id": str(team.id),
            "project_id": str(project.id),
            "other_project_id": str(other.id),
            "keys": keys,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"Team {team.id}\nProject {project.id}\nSecond project {other.id}")
        for name, secret in keys.items():
            self.stdout.write(f"{name:>14}: {secret}")
