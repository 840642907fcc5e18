from django.urls import path

from contacts.topics.api.views import ContactSubscriptionsView, TopicDetailView, TopicListView

urlpatterns = [
    path("topics", TopicListView.as_view(), name="topic-list"),
    path("topics/<uuid:topic_id>", TopicDetailView.as_view(), name="topic-detail"),
    path(
        "contacts/<uuid:contact_id>/subscriptions",
        ContactSubscriptionsView.as_view(),
        name="contact-subscriptions",
    ),
]
