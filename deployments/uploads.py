"""Signed upload URLs for source tarballs, and storing what is PUT to them.

The URL carries its own authorisation (LangChain's CLI sends no API key with the PUT): a signature
over the object path and the time it was issued, valid for DEPLOY_UPLOAD_URL_TTL_SECONDS. Objects
are written once; the body is copied from Django's spooled upload to disk in chunks, checked and
repacked without `.env` files.
"""

from __future__ import annotations

import re
import shutil
import uuid
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.core import signing

from core.exceptions import BadRequest, Conflict, NotFound, PermissionDenied
from deployments import archive
from deployments.models import Deployment

_SALT = "deployments.upload-url"
_OBJECT_PATH = re.compile(r"^(?P<tenant>[0-9a-f-]{36})/(?P<deployment>[0-9a-f-]{36})/[0-9a-f]{32}\.tar\.gz$")
CHUNK = 1024 * 1024


def uploads_root() -> Path:
    return Path(settings.DEPLOY_ROOT) / "uploads"


def object_file(object_path: str) -> Path:
    return uploads_root() / object_path


def upload_url_create(*, deployment: Deployment) -> dict:
    """A fresh object path for `deployment` and the signed URL that accepts a PUT of it."""
    if deployment.source != Deployment.Source.INTERNAL_SOURCE:
        raise BadRequest("upload-url is only available for internal_source deployments.")
    if deployment.status == Deployment.Status.AWAITING_DELETE:
        raise Conflict(f"Deployment ID {deployment.id} is being deleted.")
    object_path = f"{deployment.workspace_id}/{deployment.id}/{uuid.uuid4().hex}.tar.gz"
    token = signing.dumps(object_path, salt=_SALT)
    url = f"{settings.PUBLIC_BASE_URL}/v2/deployments/uploads/{object_path}?signature={quote(token, safe='')}"
    return {"upload_url": url, "object_path": object_path}


def _check_signature(object_path: str, signature: str) -> None:
    try:
        signed_path = signing.loads(signature, salt=_SALT, max_age=settings.DEPLOY_UPLOAD_URL_TTL_SECONDS)
    except signing.SignatureExpired:
        raise PermissionDenied("This upload URL has expired: request a new one with POST upload-url.") from None
    except signing.BadSignature:
        raise PermissionDenied("This upload URL is not valid.") from None
    if signed_path != object_path:
        raise PermissionDenied("This upload URL is not valid.")


def upload_store(*, object_path: str, signature: str, body) -> archive.RepackResult:
    """Store the tarball read from the file-like `body` at `object_path`, if the signature allows it."""
    _check_signature(object_path, signature or "")
    match = _OBJECT_PATH.match(object_path)
    if match is None:
        raise NotFound("Not Found")
    deployment = Deployment.objects.filter(id=match["deployment"], workspace_id=match["tenant"]).first()
    if deployment is None or deployment.status == Deployment.Status.AWAITING_DELETE:
        raise NotFound(f"Deployment ID {match['deployment']} not found.")
    final = object_file(object_path)
    if final.exists():
        raise Conflict("This object was already uploaded; request a new upload URL.")
    final.parent.mkdir(parents=True, exist_ok=True)
    raw = final.with_name(final.name + f".{uuid.uuid4().hex}.incoming")
    checked = final.with_name(final.name + f".{uuid.uuid4().hex}.checked")
    try:
        with open(raw, "wb") as out:
            shutil.copyfileobj(body, out, CHUNK)
        try:
            result = archive.repack(raw, checked)
        except archive.UnsafeArchive as exc:
            raise BadRequest(str(exc)) from None
        checked.replace(final)
        return result
    finally:
        raw.unlink(missing_ok=True)
        checked.unlink(missing_ok=True)


def require_object(deployment: Deployment, object_path: str) -> None:
    """Refuse a source_tarball_path that is not an uploaded object of this deployment."""
    match = _OBJECT_PATH.match(object_path or "")
    if not match or match["deployment"] != str(deployment.id) or match["tenant"] != str(deployment.workspace_id):
        raise BadRequest("source_tarball_path must be an object_path returned by this deployment's upload-url.")
    if not object_file(object_path).is_file():
        raise BadRequest(f"Nothing was uploaded to {object_path} yet: PUT the tarball to its upload_url first.")


def uploads_remove(*, deployment: Deployment) -> None:
    shutil.rmtree(uploads_root() / str(deployment.workspace_id) / str(deployment.id), ignore_errors=True)


def is_object_path(value: str) -> bool:
    return bool(_OBJECT_PATH.match(value))
