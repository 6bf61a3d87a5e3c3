"""Safe handling of uploaded source tarballs.

An upload is repacked as it is stored: every entry is checked (no absolute paths, no `..`, no
links leading outside the tree, no devices, bounded count and unpacked size) and `.env` files are
dropped, because they hold the user's local secrets (LangChain's CLI includes them). Extraction
checks again and uses tarfile's "data" filter on top.
"""

from __future__ import annotations

import posixpath
import tarfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

DROPPED_NAMES = frozenset({".env"})


class UnsafeArchive(Exception):
    """The tarball is not acceptable; the message names the entry and the reason."""


@dataclass
class RepackResult:
    files: int = 0
    unpacked_bytes: int = 0
    dropped: list[str] | None = None


def _normalise(name: str) -> str:
    if name.startswith("/") or (len(name) > 1 and name[1] == ":") or "\\" in name:
        raise UnsafeArchive(f"Refused entry {name!r}: absolute or non-POSIX path.")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"Refused entry {name!r}: '..' leads outside the project.")
    return "/".join(parts)


def _check_link(member: tarfile.TarInfo, name: str, seen_files: set[str]) -> None:
    if member.issym():
        if member.linkname.startswith("/"):
            raise UnsafeArchive(f"Refused link {name!r} -> {member.linkname!r}: absolute target.")
        target = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.linkname))
    else:
        target = posixpath.normpath(member.linkname)
    if target == ".." or target.startswith("../") or target.startswith("/"):
        raise UnsafeArchive(f"Refused link {name!r} -> {member.linkname!r}: it leads outside the project.")
    if member.islnk() and target not in seen_files:
        raise UnsafeArchive(f"Refused hard link {name!r}: its target {member.linkname!r} is not an earlier file.")


class _Checker:
    """Checks entries in order and keeps the running totals that the limits apply to."""

    def __init__(self):
        self.result = RepackResult(dropped=[])
        self.seen_files: set[str] = set()
        self.max_files = settings.DEPLOY_UPLOAD_MAX_FILES
        self.max_bytes = settings.DEPLOY_UPLOAD_MAX_UNPACKED_BYTES

    def accept(self, member: tarfile.TarInfo) -> str | None:
        """The entry's normalised name, None to drop it; raises UnsafeArchive to refuse the archive."""
        name = _normalise(member.name)
        if not name:
            return None
        if posixpath.basename(name) in DROPPED_NAMES:
            self.result.dropped.append(name)
            return None
        if member.issym() or member.islnk():
            _check_link(member, name, self.seen_files)
        elif not (member.isfile() or member.isdir()):
            raise UnsafeArchive(f"Refused entry {name!r}: only files, directories and links are allowed.")
        self.result.files += 1
        self.result.unpacked_bytes += max(member.size, 0)
        if self.result.files > self.max_files:
            raise UnsafeArchive(f"Refused archive: more than {self.max_files} entries.")
        if self.result.unpacked_bytes > self.max_bytes:
            raise UnsafeArchive(f"Refused archive: it unpacks to more than {self.max_bytes} bytes.")
        if member.isfile():
            self.seen_files.add(name)
        return name


def repack(source: Path, dest: Path) -> RepackResult:
    """Copy the tarball at `source` to a gzip tarball at `dest`, checked and without `.env` files."""
    checker = _Checker()
    try:
        with tarfile.open(source, "r|*") as tar_in, tarfile.open(dest, "w:gz") as tar_out:
            for member in tar_in:
                name = checker.accept(member)
                if name is None:
                    continue
                member.name = name
                # No set-id bits, no ownership from the uploader's machine.
                member.mode &= 0o755
                member.uid = member.gid = 0
                member.uname = member.gname = ""
                tar_out.addfile(member, tar_in.extractfile(member) if member.isfile() else None)
    except (tarfile.TarError, EOFError, OSError) as exc:
        dest.unlink(missing_ok=True)
        raise UnsafeArchive(f"The upload is not a readable tar archive: {exc}") from None
    except UnsafeArchive:
        dest.unlink(missing_ok=True)
        raise
    return checker.result


def extract(source: Path, dest: Path) -> RepackResult:
    """Unpack a stored tarball into `dest` (checked again; tarfile's "data" filter on top)."""
    checker = _Checker()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(source, "r:*") as tar:
            members = []
            for member in tar.getmembers():
                name = checker.accept(member)
                if name is not None:
                    member.name = name
                    members.append(member)
            tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:
        raise UnsafeArchive(f"Refused archive: {exc}") from None
    except (tarfile.TarError, EOFError) as exc:
        raise UnsafeArchive(f"The source is not a readable tar archive: {exc}") from None
    return checker.result
