from django.urls import path

from tenancy.api.views import ProjectDetailView, ProjectListView, ProjectUsageView

urlpatterns = [
    path("project", ProjectDetailView.as_view(), name="project-detail"),
    path("project/usage", ProjectUsageView.as_view(), name="project-usage"),
    path("projects", ProjectListView.as_view(), name="project-list"),
]
