from django.urls import path

from tenancy.api.views import ProjectDetailView, ProjectListView

urlpatterns = [
    path("project", ProjectDetailView.as_view(), name="project-detail"),
    path("projects", ProjectListView.as_view(), name="project-list"),
]
