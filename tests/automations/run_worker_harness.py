"""A run worker in a process of its own, for the test that kills one mid-batch: claims one
batch of due runs and advances them (sending to no one: emails are only stored), then
exits."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from automations.services.advance import runs_advance_batch  # noqa: E402

if __name__ == "__main__":
    runs_advance_batch()
