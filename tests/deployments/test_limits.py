"""Memory limits on real child processes: a cgroup of the process's own where one is writable, RLIMIT_DATA where
not, read back from the kernel, and a process that allocates past its limit does not get the memory."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deployments.processes import popen
from deployments.runners import limits

MIB = 1024 * 1024
HOG = "b = bytearray(400 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); print('survived', flush=True)"


def start(limit: limits.MemoryLimit, code: str, tmp_path) -> subprocess.Popen:
    return popen([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, preexec=limit.enter)


@pytest.fixture
def cgroup_limit():
    limit = limits.MemoryLimit("test-limits", 128)
    if limit.cgroup is None:
        pytest.skip(f"no writable memory cgroup here ({limit.why_no_cgroup})")
    yield limit
    limit.release()


def test_a_process_joins_its_own_memory_cgroup_before_it_runs_and_it_is_removed_after(cgroup_limit, tmp_path):
    process = start(cgroup_limit, "import time; time.sleep(30)", tmp_path)
    try:
        assert cgroup_limit.cgroup in limits.process_cgroups(process.pid)
        limit_file = cgroup_limit.cgroup / ("memory.max" if cgroup_limit.version == 2 else "memory.limit_in_bytes")
        assert limit_file.read_text().strip() == str(128 * MIB)
        assert cgroup_limit.describe(process.pid) == f"cgroup v{cgroup_limit.version} ({limit_file})"
    finally:
        process.kill()
        process.wait()
    cgroup_limit.release()
    assert not cgroup_limit.cgroup.exists()


def test_a_process_past_its_cgroup_limit_does_not_get_the_memory(cgroup_limit, tmp_path):
    process = start(cgroup_limit, HOG, tmp_path)
    output, _ = process.communicate(timeout=60)
    assert process.returncode != 0 and b"survived" not in output


def test_without_a_writable_cgroup_the_process_caps_its_data_segment(tmp_path):
    limit = limits.MemoryLimit("test-rlimit", 256)
    limit.release()
    limit.cgroup = None  # as on a host whose cgroups this service cannot write
    process = start(limit, "import time; time.sleep(30)", tmp_path)
    try:
        assert limits.rlimit_data(process.pid) == 256 * MIB
        assert limit.describe(process.pid).startswith("RLIMIT_DATA")
    finally:
        process.kill()
        process.wait()
    hog = start(limit, HOG, tmp_path)
    output, _ = hog.communicate(timeout=60)
    assert hog.returncode != 0 and b"MemoryError" in output and b"survived" not in output
