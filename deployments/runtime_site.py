"""The runtime a revision stands on: the service's own requirements (requirements.txt) and what they need, nothing else.

A revision's environment sees the service's code and these packages, so a project that lists nothing beyond LangGraph
installs nothing. It must not see what else happens to be installed beside the service (test tools, a developer's
extras): a project that forgot a dependency would build here and fail anywhere else. So the packages are offered as
a directory of their own, built once per set of versions under DEPLOY_ROOT/runtime/, that holds links to exactly the
runtime's files.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from django.conf import settings
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


def requirement_file() -> Path:
    return Path(settings.BASE_DIR) / "requirements.txt"


def _top_requirements() -> list[Requirement]:
    found = []
    for raw in requirement_file().read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            try:
                found.append(Requirement(line))
            except InvalidRequirement:
                continue
    return found


@lru_cache(maxsize=1)
def _installed() -> dict[str, metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        if dist.name:  # None when a broken install lacks its metadata
            found.setdefault(canonicalize_name(dist.name), dist)
    return found


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    # evaluate() fills in the rest of this interpreter's environment.
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


@lru_cache(maxsize=1)
def runtime_distributions() -> dict[str, metadata.Distribution]:
    """The installed distributions the service's requirements reach, extras included, by canonical name."""
    installed = _installed()
    extras_of: dict[str, set[str]] = {}
    pending = _top_requirements()
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        dist = installed.get(name)
        if dist is None:
            continue
        known = extras_of.get(name)
        if known is not None and set(requirement.extras) <= known:
            continue
        extras_of[name] = (known or set()) | set(requirement.extras)
        for raw in dist.requires or ():
            needed = Requirement(raw)
            if _applies(needed, extras_of[name]):
                pending.append(needed)
    return {name: installed[name] for name in sorted(extras_of)}


@lru_cache(maxsize=1)
def runtime_pins() -> dict[str, str]:
    """Name → version of every runtime package: what a project's dependencies cannot change."""
    return {name: dist.version for name, dist in runtime_distributions().items()}


def _site_of(dist: metadata.Distribution) -> Path:
    return Path(str(dist.locate_file(""))).resolve()


@lru_cache(maxsize=1)
def _records() -> dict[str, tuple[Path, list[str]]]:
    """Each installed dist's site directory and files inside it (from RECORD; scripts in bin/ and the like are
    outside and left out), as "/"-separated relative paths."""
    found = {}
    for name, dist in _installed().items():
        rows = csv.reader((dist.read_text("RECORD") or "").splitlines())
        files = [row[0] for row in rows if row and row[0] and not row[0].startswith(("..", "/"))]
        found[name] = (_site_of(dist), files)
    return found


def _link(source: Path, target: Path) -> None:
    if source.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(source, target)


def _populate(site: Path) -> None:
    """Link every runtime file into `site`: a whole top-level entry when no other installed package shares it (the
    usual case, and Python's compiled caches come along), file by file when one does (a namespace package)."""
    runtime = runtime_distributions()
    records = _records()
    owners: dict[tuple[Path, str], set[str]] = defaultdict(set)
    for name, (root, files) in records.items():
        for top in {file.split("/", 1)[0] for file in files}:
            owners[(root, top)].add(name)
    for name in runtime:
        root, files = records[name]
        for file in files:
            top = file.split("/", 1)[0]
            if owners[(root, top)] <= runtime.keys():
                _link(root / top, site / top)
            elif not (site / top).is_symlink():
                _link(root / file, site / file)


def fingerprint() -> str:
    """Names the runtime: its packages' versions and locations, and the interpreter."""
    digest = hashlib.sha256(sys.version.encode())
    for name, dist in runtime_distributions().items():
        digest.update(f"{name}=={dist.version}@{_site_of(dist)}\n".encode())
    return digest.hexdigest()[:16]


def ensure_site() -> Path:
    """The runtime's site directory, built on first use; concurrent builds each build apart and the first one
    renamed into place wins."""
    home = Path(settings.DEPLOY_ROOT) / "runtime"
    site = home / fingerprint()
    if site.is_dir():
        return site
    home.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="building-", dir=home))
    try:
        _populate(scratch)
        try:
            scratch.rename(site)
        except OSError:  # another build put it there first
            if not site.is_dir():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return site
