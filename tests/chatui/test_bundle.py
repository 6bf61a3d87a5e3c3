"""The committed chat bundle (chat/static/chat/) is exactly what `npm ci && npm run build` makes from frontend/.

The service serves the committed files, so it needs no Node.js; this test keeps them honest. It runs where Node.js
20.19 or newer and npm are installed (Vite 8 needs them) and skips elsewhere.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.support_processes import BASE_DIR

pytestmark = [pytest.mark.node, pytest.mark.no_postgres_pass]
FRONTEND = BASE_DIR / "frontend"
BUNDLE = BASE_DIR / "chat" / "static" / "chat"
MINIMUM_NODE = (20, 19)
# npm failures that mean "no registry here", not "the lockfile or the build is broken".
OFFLINE = re.compile(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network", re.IGNORECASE)


def node_problem() -> str | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "node and npm are not installed"
    found = subprocess.run([node, "-p", "process.versions.node"], capture_output=True, text=True).stdout.strip()
    version = tuple(int(part) for part in found.split(".")[:2] if part.isdigit())
    if version < MINIMUM_NODE:
        return f"Node.js {found} is older than {'.'.join(map(str, MINIMUM_NODE))}"
    return None


def npm(args: list[str], cwd, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(["npm", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def files_of(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_committed_bundle_is_what_a_fresh_npm_ci_build_produces(tmp_path):
    problem = node_problem()
    if problem:
        pytest.skip(f"The bundle check needs Node.js >= 20.19 with npm: {problem}")
    source = tmp_path / "frontend"
    shutil.copytree(FRONTEND, source, ignore=shutil.ignore_patterns("node_modules", "dist"))
    installed = npm(["ci", "--no-audit", "--no-fund", "--prefer-offline"], source, timeout=600)
    if installed.returncode != 0 and OFFLINE.search(installed.stderr):
        pytest.skip(f"npm ci could not reach the package registry: {installed.stderr.strip()[-400:]}")
    assert installed.returncode == 0, f"npm ci failed:\n{installed.stderr[-3000:]}"

    out = tmp_path / "bundle"
    built = npm(["run", "build", "--", "--outDir", str(out), "--emptyOutDir"], source, timeout=600)
    assert built.returncode == 0, f"npm run build failed:\n{built.stdout[-2000:]}\n{built.stderr[-2000:]}"

    fresh, committed = files_of(out), files_of(BUNDLE)
    assert sorted(fresh) == sorted(committed), "the bundle's files differ"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, (f"{', '.join(stale)} in chat/static/chat/ differ from a fresh build: rebuild with "
                       f"`cd frontend && npm ci && npm run build` and commit the result")
