"""Keep Python's cyclic garbage collector off what a server process loads once and keeps for its whole life.

A web process holds about 200,000 container objects once Django, DRF, LangChain and LangGraph are loaded, and every
full (generation 2) collection walks all of them: 150-200 ms on the 2-core benchmark machine, up to 475 ms when its
cores are busy, while the event loop delivers nothing. Those pauses were the p99 delivery latency of chat streams
(bench/stream_fanout.py --paced). `gc.freeze()` moves them to a permanent generation that collections skip; full
collections then take 10-50 ms.
"""

from __future__ import annotations

import gc


def freeze_loaded_objects() -> None:
    """Collect once, then exempt every object alive now from later collections (call it when startup is done)."""
    gc.collect()
    gc.freeze()
