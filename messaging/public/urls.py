from django.urls import path

from messaging.public import preferences, views

urlpatterns = [
    path("t/o/<str:token>", views.open_pixel, name="track-open"),
    path("t/c/<str:token>", views.click_redirect, name="track-click"),
    path("u/<str:token>", views.unsubscribe, name="unsubscribe"),
    path("p/<str:token>", preferences.preference_page, name="preferences"),
]
