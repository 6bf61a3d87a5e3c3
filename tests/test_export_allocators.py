"""The allocator settings of a worker that runs exports: a fixed mmap threshold and Arrow on the system allocator.

Each check runs in a fresh interpreter: the settings last for the whole process, and pyarrow reads its pool's
variable once, when it loads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Allocates 1 MiB blocks with malloc and says how many of them glibc served with their own mmap.
MMAPPED_BLOCKS = """
import ctypes
from core import heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = (ctypes.c_void_p,)

def mmapped_blocks(size):
    before = libc.mallinfo2().hblks
    blocks = [libc.malloc(size) for _ in range(4)]
    count = libc.mallinfo2().hblks - before
    for block in blocks:
        libc.free(block)
    return count

assert heap.fix_malloc_mmap_threshold(THRESHOLD)
print(mmapped_blocks(1024 * 1024))
"""


def run_python(code: str, **env: str) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "ARROW_DEFAULT_MEMORY_POOL"}
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**environment, **env},
                               capture_output=True, text=True, timeout=60, check=True)
    return completed.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt and mallinfo2")
def test_blocks_above_the_fixed_mmap_threshold_get_their_own_mapping_and_blocks_below_it_do_not():
    assert run_python(MMAPPED_BLOCKS.replace("THRESHOLD", str(128 * 1024))) == "4"
    assert run_python(MMAPPED_BLOCKS.replace("THRESHOLD", str(4 * 1024 * 1024))) == "0"


# Arrow's default pool in a worker that ran the export job's allocator settings before loading pyarrow.
ARROW_POOL_AFTER_THE_JOBS_SETTINGS = """
import django, os
os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'
django.setup()
from exports.bulk_exports.jobs import bound_export_allocators
bound_export_allocators()
import pyarrow
print(pyarrow.default_memory_pool().backend_name)
"""


def test_the_export_job_puts_arrow_on_the_system_allocator_before_pyarrow_loads():
    assert run_python("import pyarrow\nprint(pyarrow.default_memory_pool().backend_name)") != "system"
    assert run_python(ARROW_POOL_AFTER_THE_JOBS_SETTINGS) == "system"


def test_an_arrow_pool_chosen_by_the_operator_is_kept():
    assert run_python(ARROW_POOL_AFTER_THE_JOBS_SETTINGS, ARROW_DEFAULT_MEMORY_POOL="jemalloc") == "jemalloc"
