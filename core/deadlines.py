"""A time so many minutes from now, or none when the calendar ends first.

A TTL is a number of minutes a client chooses (a thread's `ttl.ttl`, a store item's `ttl`); one so large that its
end would fall past the last date Python can hold (the year 9999) never comes, so it is no deadline at all, rather
than an overflow that failed the request.
"""

from __future__ import annotations

from datetime import datetime, timedelta


def minutes_after(start: datetime, minutes: float) -> datetime | None:
    try:
        return start + timedelta(minutes=minutes)
    except OverflowError:
        return None
