"""Time and duration parsing: every caller gets InputError, never OverflowError (issue 12)."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carbonshift.errors import InputError
from carbonshift.units import MAX_DURATION_S, parse_duration, parse_utc, to_utc

WANT_UNIT_S = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}

DURATION_CASES = [
    pytest.param(
        "400 nines then d", "9" * 400 + "d", "longer than", id="400-nines-days-is-infinite"
    ),
    pytest.param("timedelta overflow", "1000000000000d", "longer than", id="trillion-days"),
    pytest.param("past the cap", "9999999d", "longer than", id="ten-million-days"),
    pytest.param("huge hours", "1" + "0" * 30 + "h", "longer than", id="1e30-hours"),
    pytest.param("no unit", "12", "not a duration", id="missing-unit"),
]


@pytest.mark.parametrize(("_story", "text", "want_phrase"), DURATION_CASES)
def test_parse_duration_refuses_with_input_error(_story: str, text: str, want_phrase: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_duration(text, what="expected-runtime")
    message = str(caught.value)
    assert want_phrase in message
    assert "expected-runtime" in message
    assert "\n" not in message
    assert len(message) < 200


def test_parse_duration_accepts_the_cap_itself() -> None:
    assert parse_duration(f"{MAX_DURATION_S / 86400:.0f}d") == timedelta(seconds=MAX_DURATION_S)


@given(
    digits=st.text(alphabet="0123456789", min_size=1, max_size=500),
    fraction=st.one_of(st.just(""), st.text(alphabet="0123456789", min_size=1, max_size=20)),
    unit=st.sampled_from(["s", "sec", "m", "min", "h", "d", "D", "H"]),
)
def test_parse_duration_never_overflows(digits: str, fraction: str, unit: str) -> None:
    text = digits + ("." + fraction if fraction else "") + unit
    want_s = float(text[: -len(unit)]) * WANT_UNIT_S[unit.lower()]
    if want_s > MAX_DURATION_S:
        with pytest.raises(InputError, match="longer than"):
            parse_duration(text)
    else:
        assert parse_duration(text) == timedelta(seconds=want_s)


@given(st.text(max_size=60))
def test_parse_duration_any_text_gives_timedelta_or_input_error(text: str) -> None:
    with contextlib.suppress(InputError):
        assert isinstance(parse_duration(text), timedelta)


@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)),
    offset_min=st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_parse_utc_at_the_ends_of_time_gives_input_error(moment: datetime, offset_min: int) -> None:
    sign = "+" if offset_min >= 0 else "-"
    text = moment.isoformat() + f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"
    want_utc = moment.replace(tzinfo=UTC) - timedelta(minutes=offset_min)
    if want_utc.year < 1 or want_utc >= datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC):
        with pytest.raises(InputError, match="deadline"):
            parse_utc(text, what="deadline")
    else:
        assert parse_utc(text, what="deadline") == want_utc


def test_to_utc_refuses_year_one_with_positive_offset() -> None:
    moment = datetime.fromisoformat("0001-01-01T00:00:00+01:00")
    with pytest.raises(InputError, match="leaves the years 1-9999"):
        to_utc(moment, what="deadline")
