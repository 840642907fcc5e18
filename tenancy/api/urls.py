from django.urls import path

from tenancy.api.views import ProjectDetailView

urlpatterns = [
    path("project", ProjectDetailView.as_view(), name="project-detail"),
]
