"""A fan-out worker in a process of its own, for the test that kills one mid-fan-out:
works batches in order until the batch at position HOLD_AT_POSITION, where it stops
inside that batch's transaction (its recipients and emails written, not committed),
creates the file HOLD_FILE to say so, and waits to be killed."""

import os
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django

django.setup()

from messaging.services import campaign_fanout  # noqa: E402

HOLD_AT_POSITION = int(os.environ["HOLD_AT_POSITION"])
HOLD_FILE = Path(os.environ["HOLD_FILE"])
_work = campaign_fanout.campaign_fanout_run


def _holding(**kwargs):  # type: ignore[no-untyped-def]
    made = _work(**kwargs)
    if kwargs["batch"].position == HOLD_AT_POSITION:
        HOLD_FILE.touch()
        while True:
            time.sleep(1)
    return made


campaign_fanout.campaign_fanout_run = _holding

if __name__ == "__main__":
    while campaign_fanout.campaign_fanout_batch():
        pass
