from django.urls import path, register_converter

from automations.api.converters import LifecycleActionConverter
from automations.api.report import AutomationReportView
from automations.api.views import (
    AutomationActionExecuteView,
    AutomationActionPrepareView,
    AutomationActionView,
    AutomationDetailView,
    AutomationListView,
    AutomationRunCancelView,
    AutomationRunDetailView,
    AutomationRunListView,
    AutomationTestRunView,
    AutomationVersionDetailView,
    AutomationVersionListView,
    AutomationVersionRestoreView,
    DefinitionSchemaView,
)

register_converter(LifecycleActionConverter, "lifecycle_action")

AUTOMATION = "automations/<uuid:automation_id>"

urlpatterns = [
    path("automations", AutomationListView.as_view(), name="automation-list"),
    path(
        "automations/definition-schema",
        DefinitionSchemaView.as_view(),
        name="automation-definition-schema",
    ),
    path(AUTOMATION, AutomationDetailView.as_view(), name="automation-detail"),
    path(
        f"{AUTOMATION}/versions",
        AutomationVersionListView.as_view(),
        name="automation-version-list",
    ),
    path(
        f"{AUTOMATION}/versions/<uuid:version_id>",
        AutomationVersionDetailView.as_view(),
        name="automation-version-detail",
    ),
    path(
        f"{AUTOMATION}/versions/<uuid:version_id>/restore",
        AutomationVersionRestoreView.as_view(),
        name="automation-version-restore",
    ),
    path(
        f"{AUTOMATION}/actions/<lifecycle_action:action>",
        AutomationActionView.as_view(),
        name="automation-action",
    ),
    path(
        f"{AUTOMATION}/actions/<lifecycle_action:action>/prepare",
        AutomationActionPrepareView.as_view(),
        name="automation-action-prepare",
    ),
    path(
        f"{AUTOMATION}/actions/<lifecycle_action:action>/execute",
        AutomationActionExecuteView.as_view(),
        name="automation-action-execute",
    ),
    path(f"{AUTOMATION}/runs", AutomationRunListView.as_view(), name="automation-run-list"),
    path(f"{AUTOMATION}/report", AutomationReportView.as_view(), name="automation-report"),
    path(
        f"{AUTOMATION}/test-runs",
        AutomationTestRunView.as_view(),
        name="automation-test-run-create",
    ),
    path(
        f"{AUTOMATION}/runs/<uuid:run_id>",
        AutomationRunDetailView.as_view(),
        name="automation-run-detail",
    ),
    path(
        f"{AUTOMATION}/runs/<uuid:run_id>/cancel",
        AutomationRunCancelView.as_view(),
        name="automation-run-cancel",
    ),
]
