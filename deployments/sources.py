"""Where a revision's code comes from: an uploaded tarball or a git repository.

Git runs with an environment built from scratch (no system or user git config, no prompts) and
with only the https and file protocols allowed. An https remote passes the egress guard and git
is pinned to the addresses the guard checked, so DNS cannot be re-pointed between the check and
the clone; `file://` remotes must lie under DEPLOY_GIT_ALLOWED_ROOTS.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

from core import egress
from core.exceptions import BadRequest
from deployments import archive
from deployments.processes import LineSink, run_logged

_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/\-]{0,254}$")


def file_repo_path(url: str) -> Path:
    """The local directory of a `file://` URL, refused unless it lies under an allowed root."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise BadRequest("A file:// repository URL cannot name a host.")
    path = Path(unquote(parts.path)).resolve()
    roots = [Path(root).resolve() for root in settings.DEPLOY_GIT_ALLOWED_ROOTS]
    if not any(path == root or root in path.parents for root in roots):
        allowed = ", ".join(str(r) for r in roots) or "none are configured"
        raise BadRequest(f"The repository {path} is not under DEPLOY_GIT_ALLOWED_ROOTS ({allowed}).")
    return path


def check_repo_url(url: str) -> None:
    """Refuse a repository URL that the builder would not clone (raises BadRequest)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme == "file":
        file_repo_path(url)
    elif scheme == "https":
        egress.check_url(url, require_https=True)
    else:
        raise BadRequest("repo_url must be an https:// URL (or a file:// URL under DEPLOY_GIT_ALLOWED_ROOTS).")


def check_repo_ref(ref: str | None) -> None:
    if ref is not None and (not _REF.match(ref) or ".." in ref):
        raise BadRequest(f"repo_ref {ref!r} is not a valid branch, tag or commit.")


def _git_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_ALLOW_PROTOCOL": "https:file",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ASKPASS": "/bin/false",
        "LANG": "C.UTF-8",
    }


def _git_options(url: str) -> list[str]:
    options = ["-c", "http.followRedirects=false", "-c", "protocol.allow=never",
               "-c", "protocol.https.allow=always", "-c", "protocol.file.allow=always",
               "-c", "core.symlinks=false", "-c", "advice.detachedHead=false"]
    if urlsplit(url).scheme.lower() == "https":
        target = egress.check_url(url, require_https=True)
        pinned = ",".join(f"[{a}]" if ":" in a else a for a in target.addresses)
        options += ["-c", f"http.curloptResolve={target.host}:{target.port}:{pinned}"]
    else:
        file_repo_path(url)
    return options


def git_fetch(*, url: str, ref: str | None, dest: Path, home: Path, sink: LineSink, should_stop) -> str:
    """Fetch `ref` (a branch, tag or commit; default HEAD) of `url` into `dest`; return the commit sha."""
    check_repo_ref(ref)
    wanted = (ref or "HEAD").removeprefix("refs/heads/")
    env = _git_env(home)
    dest.mkdir(parents=True, exist_ok=True)
    options = _git_options(url)
    steps = [
        ["git", *options, "init", "--quiet", str(dest)],
        ["git", *options, "-C", str(dest), "fetch", "--depth", "1", "--no-tags", url, wanted],
        ["git", *options, "-C", str(dest), "checkout", "--quiet", "FETCH_HEAD"],
    ]
    for command in steps:
        code = run_logged(command, env=env, cwd=dest, sink=sink, should_stop=should_stop,
                          timeout=settings.DEPLOY_GIT_TIMEOUT_SECONDS)
        if code != 0:
            raise SourceError(f"git {command[len(options) + 1]} failed with exit code {code}.")
    result = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], env=env, cwd=dest, capture_output=True,
                            text=True, timeout=60)
    return result.stdout.strip()


class SourceError(Exception):
    """The source could not be fetched; the message says why and goes to the build log."""


def extract_upload(*, object_path: str, dest: Path) -> None:
    """Unpack an uploaded tarball into `dest`, refusing anything unsafe."""
    try:
        archive.extract(upload_file(object_path), dest)
    except archive.UnsafeArchive as exc:
        raise SourceError(str(exc)) from None
    except FileNotFoundError:
        raise SourceError(f"The uploaded source {object_path} no longer exists.") from None


def upload_file(object_path: str) -> Path:
    return Path(settings.DEPLOY_ROOT) / "uploads" / object_path
