from django.urls import path

from events.api.views import EventBatchView, EventIngestView, EventTypeListView

urlpatterns = [
    path("events", EventIngestView.as_view(), name="events-create"),
    path("events/batch", EventBatchView.as_view(), name="events-batch"),
    path("event-types", EventTypeListView.as_view(), name="event-types-list"),
]
