"""The process level of the key and project cache stays bounded."""

import pytest

from tenancy import cache as two_level

pytestmark = pytest.mark.django_db


def test_the_process_level_drops_entries_past_its_bound(monkeypatch):
    monkeypatch.setattr(two_level, "LOCAL_MAX_ENTRIES", 50)
    for n in range(200):
        assert two_level.cached(f"bound-test:{n}", lambda n=n: n) == n
    assert len(two_level._local) <= 50
    # What is still cached answers without loading again.
    assert two_level.cached("bound-test:199", lambda: pytest.fail("loaded")) == 199
