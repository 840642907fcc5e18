from django.urls import path

from contacts.audiences.api.views import (
    AudienceDetailView,
    AudienceListView,
    AudienceMemberDetailView,
    AudienceMemberListView,
    AudiencePropertyListView,
)

urlpatterns = [
    path("audiences", AudienceListView.as_view(), name="audience-list"),
    path("audiences/<uuid:audience_id>", AudienceDetailView.as_view(), name="audience-detail"),
    path(
        "audiences/<uuid:audience_id>/properties",
        AudiencePropertyListView.as_view(),
        name="audience-property-list",
    ),
    path(
        "audiences/<uuid:audience_id>/members",
        AudienceMemberListView.as_view(),
        name="audience-member-list",
    ),
    path(
        "audiences/<uuid:audience_id>/members/<uuid:contact_id>",
        AudienceMemberDetailView.as_view(),
        name="audience-member-detail",
    ),
]
