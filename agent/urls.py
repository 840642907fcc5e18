from django.urls import path

from agent.views import McpView

urlpatterns = [
    path("mcp", McpView.as_view(), name="mcp"),
]
