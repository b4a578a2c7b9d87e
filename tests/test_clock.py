"""The one clock (sjfbco/clock.py): its arithmetic by hand on a fake time source."""

from __future__ import annotations

import math

import pytest

from sjfbco.clock import MIN_SLICE, Deadline
from sjfbco.errors import InputError


class FakeTime:
    """A time source that moves only when told to."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_start_left_expired_by_hand():
    clock = FakeTime(100.0)
    d = Deadline.start(10.0, now=clock)
    assert (d.end, d.limit, d.begun) == (110.0, 10.0, 100.0)
    assert d.left() == 10.0 and not d.expired() and not d.unlimited
    clock.t = 107.5
    assert d.left() == 2.5 and d.elapsed() == 7.5 and d.room() == 2.5
    clock.t = 110.0  # at the end: expired, nothing left
    assert d.expired() and d.left() == 0.0
    clock.t = 111.0  # past it: left stays at 0, room goes below
    assert d.left() == 0.0 and d.room() == -1.0


def test_no_limit_never_expires_and_its_parts_have_none():
    clock = FakeTime()
    d = Deadline.start(None, now=clock)
    assert d.unlimited and d.left() is None and d.seconds() is None and d.room() == math.inf
    clock.t += 1e9
    assert not d.expired() and not d.too_short()
    # shares, reserves and windows of no limit are no limit (iteration runs stay
    # deterministic); only within() and share_of_limit(unlimited=) set an end
    for part in (d.share(0.5), d.share_of_limit(0.5), d.reserve(3.0), d.window(2.0)):
        assert part.end is None
    assert d.within(4.0).end == clock.t + 4.0
    assert d.share_of_limit(0.5, unlimited=60.0).end == clock.t + 60.0


def test_share_of_what_is_left():
    clock = FakeTime(0.0)
    d = Deadline.start(20.0, now=clock)
    clock.t = 4.0  # 16 s left: half of it ends at 4 + 8 = 12
    half = d.share(0.5)
    assert half.end == 12.0 and half.limit == 20.0
    assert d.share(1.0).end == 20.0
    clock.t = 25.0  # past the end: a share is empty, never negative
    assert d.share(0.5).end == 25.0 and d.share(0.5).left() == 0.0


def test_share_of_the_limit_keeps_the_reserve():
    clock = FakeTime(0.0)
    d = Deadline.start(100.0, now=clock)
    clock.t = 10.0
    # 0.3 of the limit is 30 s; 90 s left less keep 0.2 x 100 = 70 s: 30 s, ends at 40
    assert d.share_of_limit(0.3, keep=0.2).end == 40.0
    clock.t = 60.0
    # 40 s left less 20 kept = 20 s < 30 s: ends at 80
    assert d.share_of_limit(0.3, keep=0.2).end == 80.0
    clock.t = 85.0
    # 15 s left less 20 kept < 0: an empty part ending now
    part = d.share_of_limit(0.3, keep=0.2)
    assert part.end == 85.0 and part.expired()


def test_reserve_window_and_parts_never_outlast_their_deadline():
    clock = FakeTime(0.0)
    d = Deadline.start(10.0, now=clock)
    assert d.reserve(2.5).end == 7.5
    clock.t = 3.0
    assert d.window(2.0).end == 5.0
    assert d.window(50.0).end == 10.0  # capped by the deadline
    assert d.window(None).end == 10.0
    assert d.within(50.0).end == 10.0
    # a part of a part: 7 s left of the reserve's 7.5 - 3 = 4.5 s, half ends at 3 + 2.25
    assert d.reserve(2.5).share(0.5).end == 5.25


def test_least_useful_slice_and_seconds_for_libraries():
    clock = FakeTime(0.0)
    d = Deadline.start(1.0, now=clock)
    clock.t = 1.0 - MIN_SLICE / 2  # half a slice left: too short, a library gets a slice
    assert d.too_short() and d.seconds() == MIN_SLICE
    clock.t = 0.5
    assert not d.too_short() and d.seconds() == 0.5
    assert d.too_short(least=0.6) and d.seconds(least=0.6) == 0.6
    assert MIN_SLICE == 0.05


def test_ctrl_c_ends_every_part():
    clock, asked = FakeTime(0.0), [False]
    d = Deadline.start(10.0, now=clock, stop=lambda: asked[0])
    parts = [d, d.share(0.5), d.reserve(1.0), d.window(2.0), Deadline.never(stop=d.stop)]
    assert not any(p.expired() or p.interrupted() for p in parts)
    asked[0] = True
    assert all(p.expired() and p.interrupted() for p in parts)
    assert d.left() == 10.0  # time itself is untouched


def test_bad_limits_are_refused():
    for bad in (0, -1.0, math.inf, math.nan, True):
        with pytest.raises(InputError, match="time limit"):
            Deadline.start(bad)


def test_frozen():
    d = Deadline.start(1.0)
    with pytest.raises(AttributeError):
        d.end = 5.0  # type: ignore[misc]
