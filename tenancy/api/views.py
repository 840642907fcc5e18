import datetime as dt

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import Forbidden, Issue, ValidationFailed
from config.api.pagination import paginate
from config.api.params import date_param
from tenancy.api.base import ProjectView
from tenancy.api.serializers import (
    ProjectSerializer,
    ProjectUpdateSerializer,
    UsageSerializer,
    project_data,
)
from tenancy.selectors import plan_terms_get, project_list_for_key
from tenancy.services import project_update
from tenancy.usage import MAX_RANGE_DAYS, METERS, month_start, today
from tenancy.usage_days import usage_days


class ProjectListView(ProjectView):
    """Account discovery: the projects this key can reach."""

    project_scoped = False
    paginated = True

    @extend_schema(responses={200: ProjectSerializer(many=True)}, operation_id="projects_list")
    def get(self, request: Request) -> Response:
        projects = project_list_for_key(key=self.key)
        return paginate(request, projects, lambda rows: [project_data(row) for row in rows])


class ProjectDetailView(ProjectView):
    """The project the request acts on, and its policies."""

    lean_methods = frozenset({"GET"})

    @extend_schema(responses={200: ProjectSerializer}, operation_id="project_retrieve")
    def get(self, request: Request) -> Response:
        return Response(project_data(self.project))

    @extend_schema(
        request=ProjectUpdateSerializer,
        responses={200: ProjectSerializer},
        operation_id="project_update",
    )
    def patch(self, request: Request) -> Response:
        if not self.access.may_manage_project:
            raise Forbidden(
                "Changing project settings needs full access or the owner or admin role."
            )
        body = self.validated(ProjectUpdateSerializer)
        project = project_update(
            project=self.project,
            name=body.get("name"),
            policies=body.get("policies", {}),
        )
        return Response(project_data(project))


class ProjectUsageView(ProjectView):
    """Metered usage of the project by day (UTC), with totals and the team's plan.
    Counts include the current day, up to the last second."""

    @extend_schema(
        operation_id="project_usage_retrieve",
        parameters=[
            OpenApiParameter(
                "from",
                str,
                description="First day, YYYY-MM-DD (default: the first of the current month).",
                pattern=r"^\d{4}-\d{2}-\d{2}$",
            ),
            OpenApiParameter(
                "to",
                str,
                description=f"Last day, YYYY-MM-DD (default: today); at most {MAX_RANGE_DAYS} "
                "days after `from`.",
                pattern=r"^\d{4}-\d{2}-\d{2}$",
            ),
        ],
        responses={200: UsageSerializer},
    )
    def get(self, request: Request) -> Response:
        start, end = date_param(request, "from"), date_param(request, "to")
        now = today()
        if start is None:
            start = month_start(end or now)
        if end is None:
            end = max(now, start)
        if start > end:
            raise ValidationFailed.at("to", "Must not be before `from`.", code="invalid_range")
        if (end - start).days >= MAX_RANGE_DAYS:
            raise ValidationFailed(
                issues=[
                    Issue(
                        code="range_too_long",
                        path="to",
                        message=f"Ask for at most {MAX_RANGE_DAYS} days at a time.",
                    )
                ]
            )
        days = usage_days(project=self.project, start=start, end=end)
        totals = {meter: sum(counts[meter] for counts in days.values()) for meter in METERS}
        terms = plan_terms_get(team_id=str(self.project.team_id))
        period = month_start(now)
        data = {
            "days": [{"date": day, **counts} for day, counts in sorted(days.items())],
            "totals": totals,
            "plan": {
                "name": terms.name,
                "period_start": dt.datetime.combine(period, dt.time(), tzinfo=dt.UTC),
                "quotas": dict(terms.quotas),
            },
        }
        return Response(UsageSerializer(data).data)
