"""Destinations' building blocks shared by the exports and admin tests: the test bucket, the writer's actions, a
destination's request body, the keys in the bucket, a `*.localhost` resolver and a port nobody listens on."""

from __future__ import annotations

import socket

BUCKET = "export-bucket"
WRITE_ACTIONS = ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"]


def localhost_resolver(host: str) -> list[str]:
    """`localhost` and every `*.localhost` name resolve to 127.0.0.1 (glibc here resolves no subdomains)."""
    if host == "localhost" or host.endswith(".localhost"):
        return ["127.0.0.1"]
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


def destination_body(endpoint: str | None, credentials, *, bucket: str = BUCKET, name: str = "My exports",
                     **config) -> dict:
    body = {"destination_type": "s3", "display_name": name,
            "config": {"bucket_name": bucket, "prefix": "exports", **config}}
    if endpoint is not None:
        body["config"]["endpoint_url"] = endpoint
    if credentials is not None:
        body["credentials"] = credentials if isinstance(credentials, dict) else credentials.as_dict()
    return body


def object_keys(s3, bucket: str = BUCKET) -> list[str]:
    return [o["Key"] for o in s3.client().list_objects_v2(Bucket=bucket).get("Contents", [])]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
