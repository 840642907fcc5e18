"""The automation endpoints as agent tools (see config.registries.agenttools).

Lifecycle changes are live: agents prepare them (`automation_action_prepare`, whose
result lists the effects) and run them with `prepared_action_execute`."""

from automations.services.lifecycle import ACTIONS as LIFECYCLE_ACTIONS
from config.registries.agenttools import AgentTool

TOOLS = [
    AgentTool(
        name="automations_list",
        description=(
            "List the project's automations with their status (`draft`, `active`, "
            "`paused`, `archived`), oldest first, a page at a time (`limit`, `after`)."
        ),
        method="GET",
        path="/automations",
        listing="page",
    ),
    AgentTool(
        name="automations_get",
        description=(
            "Read one automation by id: its draft and published versions with their "
            "definitions, every version, and its run counts."
        ),
        method="GET",
        path="/automations/{automation_id}",
    ),
    AgentTool(
        name="automations_create",
        description=(
            "Create an automation in `draft` status; its `definition` (trigger event, "
            "steps, settings; see the member's schema) becomes draft version 1. Nothing runs "
            "until it is published with `automation_action_prepare` (`publish`) and "
            "`prepared_action_execute`. Send steps need published templates."
        ),
        method="POST",
        path="/automations",
        member_schemas={"definition": "automations.definition.validation.definition_schema"},
    ),
    AgentTool(
        name="automations_update",
        description=(
            "Rename an automation or edit its draft (`definition`, made from the published "
            "version when there is no draft). Changes reach live runs only once the draft "
            "is published through prepare and execute."
        ),
        method="PATCH",
        path="/automations/{automation_id}",
        member_schemas={"definition": "automations.definition.validation.definition_schema"},
    ),
    AgentTool(
        name="automation_runs_list",
        description=(
            "List an automation's runs, oldest first, each with its step timeline and waits. "
            "Filter by `status`, `contact_id`, `execution_mode` (`live` or `test`), "
            "`created_after` and `created_before` (ISO 8601 with an offset)."
        ),
        method="GET",
        path="/automations/{automation_id}/runs",
        query=("status", "contact_id", "execution_mode", "created_after", "created_before"),
        listing="page",
    ),
    AgentTool(
        name="automation_test_run",
        description=(
            "Try an automation on one contact (`email` or `contact_id`) without sending "
            "anything: the run goes to its end in this call on a virtual clock (waits pass "
            "at once), with the trigger `payload` and any `events` injected `after` a "
            "duration (`PT30M`) to complete `wait_for_event` steps. The result is the run "
            "(`execution_mode: test`) with each step's outcome and the rendered sends. It "
            "runs the published version, else the draft, or the given `version`."
        ),
        method="POST",
        path="/automations/{automation_id}/test-runs",
    ),
    AgentTool(
        name="automation_report",
        description=(
            "Read an automation's goal report for the runs that entered from `from` to `to` "
            "(dates, UTC, both included, each optional): `entered`, `converted` and "
            "`conversion_rate` of the runs that took the automation, the same for the "
            "`holdout`, the `lift` (relative difference of the rates against the holdout) "
            "with its 95 % interval `lift_ci95`, and counts per step and per split branch. "
            "Rates are null when nothing entered. Live runs only."
        ),
        method="GET",
        path="/automations/{automation_id}/report",
        query=("from", "to"),
    ),
    AgentTool(
        name="automation_action_prepare",
        description=(
            "Prepare a lifecycle change of an automation: `publish` (its draft), `pause`, "
            "`resume` or `archive`. Nothing changes yet: the result's `effects` say what "
            "would (status from and to, the version published and the one superseded, runs "
            "in progress). Show them to the user, then run the change with "
            "`prepared_action_execute` and the `prepared_action_id` before `expires_at`."
        ),
        method="POST",
        path="/automations/{automation_id}/actions/{action}/prepare",
        path_values={"action": LIFECYCLE_ACTIONS},
    ),
]

# The operations `prepared_action_execute` runs through this family's endpoints.
EXECUTE_PATHS = {
    f"automations.{action}": f"/automations/{{resource_id}}/actions/{action}/execute"
    for action in LIFECYCLE_ACTIONS
}
