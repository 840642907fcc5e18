"""ESP tracking webhooks (`/webhooks/email/<esp>`): django-anymail's views, behind a guard
that refuses callers it cannot authenticate, and the receiver of their events."""
