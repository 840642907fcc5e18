from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from config.api.errors import Forbidden
from config.api.pagination import paginate
from tenancy.api.base import ProjectView
from tenancy.api.serializers import ProjectSerializer, ProjectUpdateSerializer
from tenancy.selectors import project_list_for_key
from tenancy.services import project_update


class ProjectListView(ProjectView):
    """Account discovery: the projects this key can reach."""

    project_scoped = False
    paginated = True

    @extend_schema(responses={200: ProjectSerializer(many=True)}, operation_id="projects_list")
    def get(self, request: Request) -> Response:
        projects = project_list_for_key(key=self.key)
        return paginate(request, projects, lambda rows: ProjectSerializer(rows, many=True).data)


class ProjectDetailView(ProjectView):
    """The project the request acts on, and its policies."""

    @extend_schema(responses={200: ProjectSerializer}, operation_id="project_retrieve")
    def get(self, request: Request) -> Response:
        return Response(ProjectSerializer(self.project).data)

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
        return Response(ProjectSerializer(project).data)
