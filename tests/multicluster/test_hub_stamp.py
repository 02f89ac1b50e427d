"""The hub's timestamps: RFC 3339 in whole seconds, the same text whether remembered or not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from carbonshift.k8s.multicluster import record
from carbonshift.k8s.multicluster.record import stamp


@pytest.mark.parametrize(
    ("moment", "want_text"),
    [
        pytest.param(datetime(2026, 11, 29, 5, 0, tzinfo=UTC), "2026-11-29T05:00:00Z", id="utc"),
        pytest.param(
            datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC),
            "2026-01-02T03:04:05Z",
            id="utc-fraction-dropped",
        ),
        pytest.param(
            datetime(2026, 11, 29, 6, 0, tzinfo=timezone(timedelta(hours=1))),
            "2026-11-29T06:00:00Z",
            id="another-zone-as-before",  # written as its wall time, as strftime did
        ),
    ],
)
def test_stamp_writes_what_strftime_writes_first_time_and_again(
    moment: datetime, want_text: str
) -> None:
    assert stamp(moment) == want_text
    assert stamp(moment) == want_text  # remembered (UTC) or written again


def test_stamp_remembers_a_bounded_number_of_moments() -> None:
    record._STAMPS.clear()
    first = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(record._STAMPS_KEPT + 10):
        stamp(first + timedelta(seconds=i))
    assert len(record._STAMPS) <= record._STAMPS_KEPT
    # an equal moment in another zone is not given the UTC text remembered
    assert stamp(first) == "2026-01-01T00:00:00Z"
    assert stamp(first.astimezone(timezone(timedelta(hours=2)))) == "2026-01-01T02:00:00Z"
