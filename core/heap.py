"""How long-lived processes hold their memory: the garbage collector and the C allocator.

Keep Python's cyclic garbage collector off what a server process loads once and keeps for its whole life.

A web process holds about 200,000 container objects once Django, DRF, LangChain and LangGraph are loaded, and every
full (generation 2) collection walks all of them: 150-200 ms on the 2-core benchmark machine, up to 475 ms when its
cores are busy, while the event loop delivers nothing. Those pauses were the p99 delivery latency of chat streams
(bench/stream_fanout.py --paced). `gc.freeze()` moves them to a permanent generation that collections skip; full
collections then take 10-50 ms.
"""

from __future__ import annotations

import ctypes
import gc


def freeze_loaded_objects() -> None:
    """Collect once, then exempt every object alive now from later collections (call it when startup is done)."""
    gc.collect()
    gc.freeze()


# mallopt()'s parameter number for the mmap threshold (glibc's malloc.h).
_M_MMAP_THRESHOLD = -3


def fix_malloc_mmap_threshold(nbytes: int) -> bool:
    """Serve every C allocation of `nbytes` or more with its own mmap, returned to the system when freed.

    glibc starts at 128 KiB but raises the threshold to the size of each mmapped block freed (up to 32 MiB), so a
    process that frees a few multi-MiB buffers then serves such buffers from its heap, which cannot shrink past
    the small long-lived allocations between them: a long export's RSS crept by 10-20 MiB that way
    (docs/benchmarks.md, "Bulk export"). Setting the threshold explicitly turns that adjustment off. Returns False
    where the C library is not glibc (nothing is changed there).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, nbytes))
