"""Destination creation vs the bare boto3 calls it is made of, against one loopback S3 server.

    .venv/bin/python bench/destination_validation.py [--iterations 60]

Ours: `POST /api/v1/bulk-exports/destinations` through the whole Django stack in-process (API-key
auth, the view's rate limit, serializer validation, the test write's rate limit, egress guard, S3 client
factory with pinned connections, PutObject + HeadObject + DeleteObject, encrypting and storing the
credential version).
Peer: a bare boto3 script doing the same test write: build a client, put, head, delete.
Both run interleaved in one process against the same moto server; medians, their ratio and the median of the
per-round ratios are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def configure_environment() -> None:
    data_dir = tempfile.mkdtemp(prefix="bench-destinations-")
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": data_dir,
        "SQLITE_PATH": str(Path(data_dir) / "bench.sqlite3"), "EGRESS_ALLOWLIST": "127.0.0.1",
        "THROTTLE_RATES": "destination-validation=1000000/min,default=1000000/min", "LOG_LEVEL": "WARNING",
    })
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--port", type=int, default=0, help="The S3 server's port (default: any free one).")
    args = parser.parse_args()
    configure_environment()

    import boto3
    import django
    from botocore.config import Config
    from moto.server import ThreadedMotoServer

    django.setup()
    import logging

    from django.conf import settings

    settings.DEBUG = False  # as in production (and bench/ingest.py): no per-query debug logging

    from django.core.management import call_command
    from rest_framework.test import APIClient

    from accounts.services import api_key_create, workspace_create

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    call_command("migrate", verbosity=0)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    credentials = {"access_key_id": "BENCHMARKKEYID000000", "secret_access_key": "bench-secret"}
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="x",
                 aws_secret_access_key="y").create_bucket(Bucket="bench-bucket")

    workspace = workspace_create(name="bench")
    _, raw_key = api_key_create(workspaces=[workspace])
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=raw_key, HTTP_X_TENANT_ID=str(workspace.id))
    body = {"display_name": "bench", "config": {"bucket_name": "bench-bucket", "prefix": "exports",
                                                "endpoint_url": endpoint}, "credentials": credentials}

    def ours() -> None:
        response = client.post("/api/v1/bulk-exports/destinations", body, format="json")
        assert response.status_code == 200, response.content

    def peer() -> None:
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id=credentials["access_key_id"],
                          aws_secret_access_key=credentials["secret_access_key"],
                          config=Config(connect_timeout=5, read_timeout=10,
                                        retries={"mode": "standard", "total_max_attempts": 2},
                                        request_checksum_calculation="when_required",
                                        response_checksum_validation="when_required"))
        key = f"exports/tmp/peer-{time.perf_counter_ns()}.txt"
        s3.put_object(Bucket="bench-bucket", Key=key, Body=b"check\n")
        s3.head_object(Bucket="bench-bucket", Key=key)
        s3.delete_object(Bucket="bench-bucket", Key=key)

    for _ in range(args.warmup):
        ours()
        peer()
    timings: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(args.iterations):
        for name, func in (("ours", ours), ("peer", peer)):
            started = time.perf_counter()
            func()
            timings[name].append(time.perf_counter() - started)
    server.stop()

    ours_median = statistics.median(timings["ours"]) * 1000
    peer_median = statistics.median(timings["peer"]) * 1000
    # Each round runs both back to back, so a round's ratio shares the machine's load of that moment.
    paired = statistics.median(o / p for o, p in zip(timings["ours"], timings["peer"], strict=True))
    print(f"iterations: {args.iterations} each, interleaved, after {args.warmup} warm-up rounds")
    print(f"ours  POST /api/v1/bulk-exports/destinations   median {ours_median:7.2f} ms")
    print(f"peer  bare boto3 client + put + head + delete   median {peer_median:7.2f} ms")
    print(f"ratio ours/peer: {ours_median / peer_median:.2f}x of the medians, {paired:.2f}x median of the per-round "
          "ratios (target <= 1.2x)")


if __name__ == "__main__":
    main()
