"""Topics: the kinds of message a contact can subscribe to or unsubscribe from."""

import uuid

from django.db import models
from django.db.models.functions import Lower

from contacts.models import Contact
from tenancy.models import Project, ProjectForeignKey, ProjectScopedModel


class SubscriptionStatus(models.TextChoices):
    SUBSCRIBED = "subscribed"
    UNSUBSCRIBED = "unsubscribed"


class SubscriptionSource(models.TextChoices):
    """Who or what made the last change: kept for consent records."""

    API = "api"
    IMPORT = "import"
    ADMIN = "admin"
    AUTOMATION = "automation"
    PREFERENCE_CENTER = "preference_center"
    UNSUBSCRIBE_LINK = "unsubscribe_link"
    COMPLAINT = "complaint"


class Topic(ProjectScopedModel):
    """A subject a project mails about (newsletter, product updates). A contact without an
    explicit choice has the topic's `default_status` (opt-in or opt-out)."""

    # No index of its own: topic_project_created_idx and the unique topic_one_per_name
    # lead with it.
    project = ProjectForeignKey(
        Project, on_delete=models.CASCADE, db_index=False, related_name="topics"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(null=True, blank=True)
    default_status = models.CharField(
        max_length=16, choices=SubscriptionStatus.choices, default=SubscriptionStatus.UNSUBSCRIBED
    )

    class Meta:
        constraints = [
            # Imports and people refer to topics by name: one per name, any case.
            models.UniqueConstraint("project", Lower("name"), name="topic_one_per_name"),
        ]
        indexes = [
            # Serves the cursor listing of a project's topics.
            models.Index(fields=["project", "created_at", "id"], name="topic_project_created_idx"),
        ]

    def __str__(self) -> str:
        return self.name


class Subscription(models.Model):
    """A contact's explicit choice for a topic, with when and through what it was made."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: subscription_topic_idx and the unique
    # subscription_one_per_topic_contact lead with it.
    topic = models.ForeignKey(
        Topic, on_delete=models.CASCADE, db_index=False, related_name="subscriptions"
    )
    contact = models.ForeignKey(Contact, on_delete=models.CASCADE, related_name="subscriptions")
    status = models.CharField(max_length=16, choices=SubscriptionStatus.choices)
    source = models.CharField(max_length=32, choices=SubscriptionSource.choices)
    changed_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "contact"], name="subscription_one_per_topic_contact"
            ),
        ]
        indexes = [
            # Serves "who is subscribed to this topic" for sends and campaigns.
            models.Index(fields=["topic", "status"], name="subscription_topic_idx"),
        ]

    def __str__(self) -> str:
        # Reads both rows: a page listing subscriptions selects them with it.
        return f"{self.contact} {self.status} to {self.topic}"
