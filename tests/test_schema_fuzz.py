"""Schemathesis against a live server (DEBUG off): the OpenAPI schema must be what the server does.

Three passes, every check on: with a valid key; with a valid key against real object ids; without
credentials. Each fails on any 5xx, any response the schema does not describe, and any operation
that answers without credentials. SCHEMA_FUZZ_EXAMPLES (default 25) sets the examples per operation
and SCHEMA_FUZZ_SEED the seed; docs/reliability.md has the long, nightly-style run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from accounts.services import api_key_create, workspace_create
from tests.deployments.support_projects import make_project, tarball
from tests.support_processes import BASE_DIR, LiveServer, child_env

pytestmark = [pytest.mark.live]

EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "25"))
SEED = os.environ.get("SCHEMA_FUZZ_SEED", "13")
BUCKET = "fuzz-bucket"


class FuzzTarget:
    def __init__(self, server: LiveServer, raw_key: str, workspace_id: str, tmp_path: Path):
        self.server = server
        self.raw_key = raw_key
        self.workspace_id = workspace_id
        self.tmp_path = tmp_path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, timeout=30,
                            headers={"X-Api-Key": self.raw_key, "X-Tenant-Id": self.workspace_id})


@pytest.fixture
def fuzz_target(transactional_db, tmp_path, s3):
    workspace = workspace_create(name="fuzz-workspace")
    _, raw_key = api_key_create(workspaces=[workspace])
    server = LiveServer(env={
        # Like production: DEBUG off, explicit secrets and hosts.
        "DEBUG": "false", "SECRET_KEY": settings.SECRET_KEY,
        "FIELD_ENCRYPTION_KEY": ",".join(settings.FIELD_ENCRYPTION_KEY), "ALLOWED_HOSTS": "127.0.0.1",
        # The loopback S3 server speaks plain HTTP on an allowlisted loopback address.
        "EXPORTS_REQUIRE_HTTPS": "false", "EGRESS_ALLOWLIST": "127.0.0.1", "NO_PROXY": "127.0.0.1,localhost",
        # Rate limits are tested elsewhere; here they would only turn the fuzzing into 429s.
        "THROTTLE_RATES": ",".join(f"{scope}=1000000/min" for scope in settings.THROTTLE_RATES),
        "DATA_DIR": str(tmp_path / "data"),
        # Deployments are accepted and queued; no worker runs, so nothing is built or started.
        "DEPLOY_LOCAL_RUNNER_ENABLED": "true", "DEPLOY_ROOT": str(tmp_path / "deploy-root"),
    }, log_path=tmp_path / "server.log").start()
    yield FuzzTarget(server, raw_key, str(workspace.id), tmp_path)
    server.stop()


# Operations whose valid-looking requests can still be refused for reasons no schema can state: the
# runs of a trace must agree with each other and their parents must exist; a destination is checked by
# writing to its bucket; a provider's URLs must resolve to an address the egress guard allows; a
# deployment's source needs the settings of that source; an export's filter has its own grammar.
# Their refusals are documented (400/422) and must still match the schema: only the
# "valid data must be accepted" check is told that these are expected.
SEMANTIC_REFUSALS = [
    *(f"{method} {prefix}{path}" for prefix in ("", "/api/v1")
      for method, path in (("POST", "/runs"), ("PATCH", "/runs/{run_id}"), ("POST", "/runs/batch"),
                           ("POST", "/runs/multipart"))),
    "POST /api/v1/bulk-exports",
    "POST /api/v1/bulk-exports/destinations", "PATCH /api/v1/bulk-exports/destinations/{destination_id}",
    "POST /v2/auth/providers", "PATCH /v2/auth/providers/{provider_id}",
    "POST /v2/deployments", "PATCH /v2/deployments/{deployment_id}",
    # A revision needs a source the runner can take; force needs a deployment already deleted.
    "POST /v2/deployments/{deployment_id}/revisions", "DELETE /v2/deployments/{deployment_id}",
    # Only a revision in progress can be interrupted; an upload must be a readable tar archive.
    "POST /v2/deployments/{deployment_id}/revisions/{revision_id}/interrupt",
    "PUT /v2/deployments/uploads/{object_path}",
]
# Deleting a deployment is asynchronous (LangSmith's behaviour): it stays readable, AWAITING_DELETE,
# until a worker has stopped and removed it, and no worker runs here.
DELETED_LATER = r"^/(v2/deployments|v1/projects)/\{"
ACCEPTED_OR_REFUSED_ON_MEANING = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]


def toml_value(value) -> str:
    # JSON strings, numbers, booleans and lists are valid TOML values.
    return json.dumps(value)


def run_schemathesis(target: FuzzTarget, name: str, *, auth: bool, parameters: dict | None = None,
                     per_operation: list[tuple[str, dict]] = (), only_path_regex: str | None = None,
                     examples: int = EXAMPLES, phases: str = "examples,coverage,fuzzing,stateful",
                     env: dict | None = None) -> None:
    report_dir = target.tmp_path / f"report-{name}"
    lines = [
        f"seed = {SEED}",
        "workers = 2",
        "request-timeout = 30",
        "[generation]",
        f"max-examples = {examples}",
        'database = "none"',
        "[checks]",
        "enabled = true",
    ]
    if auth:
        lines += ["[auth.openapi.ApiKey]", f"api_key = {toml_value(target.raw_key)}"]
    # A created workspace joins the key's workspaces: from then on, requests must name theirs.
    parameters = {"header.X-Tenant-Id": target.workspace_id, **(parameters or {})}
    lines += ["[parameters]"] + [f"{toml_value(k)} = {toml_value(v)}" for k, v in parameters.items()]
    lines += ["[[operations]]", f"include-name = {toml_value(SEMANTIC_REFUSALS)}",
              f"checks.positive_data_acceptance.expected-statuses = {toml_value(ACCEPTED_OR_REFUSED_ON_MEANING)}"]
    lines += ["[[operations]]", f"include-path-regex = {toml_value(DELETED_LATER)}",
              "checks.use_after_free.enabled = false"]
    for path_regex, values in per_operation:
        lines += ["[[operations]]", f"include-path-regex = {toml_value(path_regex)}",
                  f"parameters = {{ {', '.join(f'{toml_value(k)} = {toml_value(v)}' for k, v in values.items())} }}"]
    config = target.tmp_path / f"schemathesis-{name}.toml"
    config.write_text("\n".join(lines) + "\n")
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run",
               f"{target.server.url}/api/schema/", "--checks", "all", "--report", "junit,ndjson",
               "--report-dir", str(report_dir), "--no-color", "--phases", phases]
    if only_path_regex:
        command += ["--include-path-regex", only_path_regex]
    env = child_env({"SCHEMATHESIS_HOOKS": "tests.fuzz_hooks", "PYTHONPATH": str(BASE_DIR), **(env or {})})
    result = subprocess.run(command, cwd=target.tmp_path, env=env, capture_output=True, text=True, timeout=600)
    (target.tmp_path / f"schemathesis-{name}.log").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, (f"schemathesis ({name}) failed:\n{result.stdout[-20000:]}\n{result.stderr[-4000:]}"
                                    f"\nserver log tail:\n{target.server.output()[-4000:]}")


def created(response: httpx.Response, status: int = 200) -> dict:
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    return response.json() if response.content else {}


def seed_objects(target: FuzzTarget, s3) -> dict:
    """One of everything the schema has an id for, made through the API, and the ids to fuzz with."""
    s3.create_bucket(BUCKET)
    now = datetime.now(UTC)
    with target.client() as api:
        destination = created(api.post("/api/v1/bulk-exports/destinations", json={
            "destination_type": "s3", "display_name": "fuzz exports",
            "config": {"bucket_name": BUCKET, "prefix": "exports", "endpoint_url": s3.endpoint},
            "credentials": {"access_key_id": "AKIAFUZZTESTKEY00000", "secret_access_key": "fuzz-secret"}}))
        trace_run_id = str(uuid.uuid4())
        created(api.post("/runs", json={"id": trace_run_id, "name": "fuzz", "run_type": "chain",
                                        "start_time": now.isoformat(), "session_name": "fuzz-project"}), 202)
        [session] = created(api.get("/api/v1/sessions", params={"name": "fuzz-project"}))
        window = {"bulk_export_destination_id": destination["id"], "session_id": session["id"],
                  "start_time": (now.replace(hour=0, minute=0, second=0, microsecond=0)).isoformat()}
        export = created(api.post("/api/v1/bulk-exports", json={**window, "end_time": now.isoformat()}))
        [export_run, *_] = created(api.get(f"/api/v1/bulk-exports/{export['id']}/runs"))
        schedule = created(api.post("/api/v1/bulk-exports", json={**window, "interval_hours": 24}))
        deployment = created(api.post("/v2/deployments", json={
            "name": "fuzz-agent", "source": "internal_source", "source_config": {"deployment_type": "dev"},
            "source_revision_config": {}, "secrets": []}), 201)
        upload = created(api.post(f"/v2/deployments/{deployment['id']}/upload-url", json={}))
        created(httpx.put(upload["upload_url"], content=tarball(make_project(target.tmp_path / "project")),
                          headers={"Content-Type": "application/gzip"}))
        deployment = created(api.patch(f"/v2/deployments/{deployment['id']}", json={
            "source_revision_config": {"source_tarball_path": upload["object_path"]}}))
        # A second signed URL, for the fuzzer's own uploads.
        upload = created(api.post(f"/v2/deployments/{deployment['id']}/upload-url", json={}))
        signature = httpx.URL(upload["upload_url"]).params["signature"]
    return {
        "workspace_id": target.workspace_id, "destination_id": destination["id"], "session_id": session["id"],
        "trace_run_id": trace_run_id, "bulk_export_id": export["id"], "export_run_id": export_run["id"],
        "schedule_id": schedule["id"], "deployment_id": deployment["id"],
        "revision_id": deployment["latest_revision_id"], "object_path": upload["object_path"],
        "signature": signature,
    }


def test_every_operation_answers_as_its_schema_says_with_a_valid_key(fuzz_target):
    run_schemathesis(fuzz_target, "with-key", auth=True)


def test_every_operation_answers_as_its_schema_says_on_real_objects(fuzz_target, s3):
    ids = seed_objects(fuzz_target, s3)
    parameters = {
        "path.workspace_id": ids["workspace_id"], "path.destination_id": ids["destination_id"],
        "path.session_id": ids["session_id"], "path.bulk_export_id": ids["bulk_export_id"],
        "query.source_bulk_export_id": ids["schedule_id"], "path.deployment_id": ids["deployment_id"],
        "path.project_id": ids["deployment_id"], "path.revision_id": ids["revision_id"],
        "path.object_path": ids["object_path"], "query.signature": ids["signature"],
    }
    # `run_id` names a trace run under /runs and an export run under /bulk-exports.
    per_operation = [("^/(api/v1/)?runs/", {"path.run_id": ids["trace_run_id"]}),
                     ("^/api/v1/bulk-exports/", {"path.run_id": ids["export_run_id"]})]
    # The first pass covered the boundaries of every parameter; here the point is what real objects answer.
    run_schemathesis(fuzz_target, "real-ids", auth=True, parameters=parameters, per_operation=per_operation,
                     only_path_regex=r"\{|/bulk-exports/runs$", phases="fuzzing,stateful")


def test_every_secured_operation_answers_401_without_credentials(fuzz_target):
    # Authentication comes before any validation, so boundary values add nothing here: a few random
    # requests per operation, valid and invalid.
    run_schemathesis(fuzz_target, "without-key", auth=False, examples=max(1, EXAMPLES // 5), phases="fuzzing",
                     env={"SCHEMA_FUZZ_WITHOUT_CREDENTIALS": "1"})
