"""Wheels of installed pure-Python packages, so that offline builds (`pip --no-index`) can install what a test
project depends on beyond the runtime: a revision sees the runtime's packages only (deployments/runtime_site.py)."""

from __future__ import annotations

import csv
import io
import zipfile
from importlib import metadata
from pathlib import Path

# Written anew in the wheel: pip writes its own on install.
_INSTALL_RECORDS = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def wheel_of_installed(name: str, into: Path) -> Path:
    """Pack the installed distribution `name` back into a wheel in `into` (its files as RECORD lists them)."""
    dist = metadata.distribution(name)
    site = Path(str(dist.locate_file("")))
    info = f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}.dist-info"
    wheel = into / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-py3-none-any.whl"
    kept = [f for f in dist.files or () if not str(f).startswith("..") and "__pycache__" not in f.parts
            and not (f.parts[0] == info and f.name in _INSTALL_RECORDS)]
    into.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in kept:
            archive.write(site / file, str(file))
        record = io.StringIO()
        rows = [[str(f), "", ""] for f in kept] + [[f"{info}/RECORD", "", ""]]
        csv.writer(record, lineterminator="\n").writerows(rows)
        archive.writestr(f"{info}/RECORD", record.getvalue())
    return wheel
