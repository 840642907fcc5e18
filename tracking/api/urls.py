from django.urls import path

from tracking.api.views import (
    SegmentAliasView,
    SegmentBatchView,
    SegmentGroupView,
    SegmentIdentifyView,
    SegmentPageView,
    SegmentScreenView,
    SegmentTrackView,
)

urlpatterns = [
    path("v1/batch", SegmentBatchView.as_view(), name="tracking-batch"),
    path("v1/track", SegmentTrackView.as_view(), name="tracking-track"),
    path("v1/identify", SegmentIdentifyView.as_view(), name="tracking-identify"),
    path("v1/page", SegmentPageView.as_view(), name="tracking-page"),
    path("v1/screen", SegmentScreenView.as_view(), name="tracking-screen"),
    path("v1/group", SegmentGroupView.as_view(), name="tracking-group"),
    path("v1/alias", SegmentAliasView.as_view(), name="tracking-alias"),
]
