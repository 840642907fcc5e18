"""A delivery worker in a process of its own, for the test that kills one mid-batch:
claims one batch and sends it (to the SMTP server of EMAIL_URL), then exits."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from messaging.services.delivery import emails_deliver_batch  # noqa: E402

if __name__ == "__main__":
    emails_deliver_batch()
