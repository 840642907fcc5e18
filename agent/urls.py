from django.urls import path

from agent.views import mcp_view

urlpatterns = [
    path("mcp", mcp_view, name="mcp"),
]
