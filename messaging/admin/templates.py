"""Staff console for message templates: their versions, each with a rendered preview."""

import uuid

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from config.api.errors import ServiceError
from config.console.admin import ReadOnlyInline, ReadOnlyModelAdmin, pretty_json
from contacts.models import Contact
from messaging.models.templates import MessageTemplate, TemplateVersion
from messaging.services.rendering import (
    RenderedEmail,
    SampleEvent,
    render_version,
    template_context,
)

# What the console renders every version with: a made-up contact and event, never stored.
SAMPLE_CONTACT = Contact(
    id=uuid.UUID(int=0),
    email="ada@example.com",
    external_id="sample-contact",
    fields={"first_name": "Ada", "last_name": "Lovelace", "plan": "pro"},
)
SAMPLE_EVENT = SampleEvent("sample.event", {"order_id": "1001", "total": 42})


class TemplateVersionInline(ReadOnlyInline):
    model = TemplateVersion
    ordering = ["-version_number"]
    readonly_fields = (
        "version_number",
        "state",
        "subject",
        "title",
        "created_at",
        "published_at",
    )
    fields = readonly_fields


@admin.register(MessageTemplate)
class MessageTemplateAdmin(ReadOnlyModelAdmin):
    """Read-only: templates change through the API, under its validation and locks."""

    list_display = ["name", "channel", "project", "created_at", "deleted_at"]
    list_filter = ["channel", ("deleted_at", admin.EmptyFieldListFilter)]
    list_select_related = ["project"]
    search_fields = ["name", "=id"]
    raw_id_fields = ["project"]
    readonly_fields = (
        "id",
        "project",
        "name",
        "channel",
        "from_email",
        "created_at",
        "updated_at",
        "deleted_at",
    )
    fields = readonly_fields
    inlines = [TemplateVersionInline]


@admin.register(TemplateVersion)
class TemplateVersionAdmin(ReadOnlyModelAdmin):
    list_display = ["template", "version_number", "state", "created_at", "published_at"]
    list_filter = ["state"]
    list_select_related = ["template"]
    search_fields = ["=template__id", "template__name"]
    raw_id_fields = ["template", "restored_from_version"]
    readonly_fields = (
        "id",
        "template",
        "version_number",
        "state",
        "restored_from_version",
        "created_at",
        "published_at",
        "subject",
        "html",
        "text",
        "title",
        "body",
        "data_display",
        "preview",
    )
    fields = readonly_fields

    @admin.display(description="data")
    def data_display(self, obj: TemplateVersion) -> SafeString:
        return pretty_json(obj.data)

    @admin.display(description="preview (sample contact and event)")
    def preview(self, obj: TemplateVersion) -> SafeString:
        variables = template_context(
            project=obj.template.project,
            contact=SAMPLE_CONTACT,
            event=SAMPLE_EVENT,
            data={},
        )
        try:
            rendered = render_version(obj, variables)
        except ServiceError as error:
            return format_html("<p>Does not render: {}</p>", error.details or error.message)
        undefined = format_html(
            "<p>Undefined: {}</p>",
            ", ".join(rendered.undefined_variables) or "none",
        )
        if not isinstance(rendered, RenderedEmail):
            return format_html(
                "{}{}{}",
                format_html("<p><strong>{}</strong></p><p>{}</p>", rendered.title, rendered.body),
                pretty_json(rendered.data),
                undefined,
            )
        # The message's HTML runs in a sandboxed frame: no scripts, forms or same origin;
        # escaped into the attribute, so it cannot break out of it.
        frame = (
            format_html(
                '<iframe sandbox="" srcdoc="{}" style="width:100%;height:480px;'
                'border:1px solid #ccc;background:#fff"></iframe>',
                rendered.html,
            )
            if rendered.html is not None
            else ""
        )
        return format_html(
            "{}{}{}{}",
            format_html("<p><strong>Subject:</strong> {}</p>", rendered.subject),
            frame,
            format_html_join("", '<pre style="white-space:pre-wrap">{}</pre>', [(rendered.text,)])
            if rendered.text is not None
            else "",
            undefined,
        )
