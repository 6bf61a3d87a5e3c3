"""The LangSmith-compatible ingestion routes: formats, merging, validation, limits, tenants."""

from __future__ import annotations

import uuid

import orjson
import pytest
import zstandard

from tests.tracing.support_wire import multipart, run_body
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db


def post_batch(client, post=(), patch=(), prefix=""):
    return client.post(f"{prefix}/runs/batch", orjson.dumps({"post": list(post), "patch": list(patch)}),
                       content_type="application/json")


def post_multipart(client, ops, *, compress=False, prefix=""):
    body, headers = multipart(ops, compress=compress)
    return client.generic("POST", f"{prefix}/runs/multipart", body, **headers)


@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_info_advertises_multipart_zstd_and_the_batch_size_limit_without_a_key(client, prefix, settings):
    response = client.get(f"{prefix}/info")
    assert response.status_code == 200
    info = response.json()
    assert info["batch_ingest_config"]["use_multipart_endpoint"] is True
    assert info["batch_ingest_config"]["size_limit_bytes"] == settings.TRACE_BODY_MAX_BYTES == 20 * 1024 * 1024
    assert info["instance_flags"]["zstd_compression_enabled"] is True


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zstd"])
@pytest.mark.parametrize("prefix", ["", "/api/v1"])
def test_multipart_stores_a_tree_and_merges_the_patch_into_its_post(api_client, workspace, compress, prefix):
    root = run_body(name="agent", outputs=None)
    child = run_body(parent=root, name="search", run_type="tool", offset_ms=5)
    child_patch = {**child, "outputs": {"hits": 3}, "end_time": "2026-03-01T12:00:01+00:00"}
    response = post_multipart(api_client, [("post", root), ("post", child), ("patch", child_patch)],
                              compress=compress, prefix=prefix)
    assert response.status_code == 202, response.content
    assert response.json() == {"post": 2, "patch": 1, "ignored_parts": 0, "not_stored": []}
    stored = Run.objects.get(id=child["id"])
    assert stored.workspace == workspace and stored.session.name == "proj"
    assert str(stored.trace_id) == root["id"] and str(stored.parent_run_id) == root["id"]
    assert stored.parent_run_ids == [root["id"]] and stored.is_root is False
    assert stored.dotted_order == child["dotted_order"]
    assert stored.inputs == {"question": "search"} and stored.outputs == {"hits": 3}
    assert stored.status == "success"
    assert Run.objects.get(id=root["id"]).status == "pending"


def test_a_patch_in_a_later_request_completes_the_run(api_client):
    run = run_body()
    post_batch(api_client, post=[run])
    response = post_batch(api_client, patch=[{**run, "end_time": "2026-03-01T12:00:02Z", "error": "boom"}])
    assert response.status_code == 202
    stored = Run.objects.get(id=run["id"])
    assert stored.status == "error" and stored.error == "boom" and stored.end_time.second == 2


def test_a_patch_that_arrives_before_its_post_is_kept_and_the_post_does_not_undo_it(api_client):
    run = run_body()
    post_batch(api_client, patch=[{**run, "outputs": {"answer": 42}, "end_time": "2026-03-01T12:00:03Z"}])
    post_batch(api_client, post=[{**run, "inputs": {"question": "late"}}])
    stored = Run.objects.get(id=run["id"])
    assert stored.outputs == {"answer": 42} and stored.status == "success"
    assert stored.inputs == {"question": "step"}  # the patch carried inputs already; a post only fills gaps


def test_a_run_sent_twice_is_stored_once(api_client):
    run = run_body()
    for _ in range(2):
        assert post_batch(api_client, post=[run]).status_code == 202
        assert post_multipart(api_client, [("post", run)]).status_code == 202
    assert Run.objects.filter(id=run["id"]).count() == 1


def test_an_unknown_session_name_creates_the_project_and_no_session_means_default(api_client, workspace):
    named = run_body(session_name="brand-new")
    unnamed = run_body()
    del unnamed["session_name"]
    post_batch(api_client, post=[named, unnamed])
    names = set(TracingProject.objects.filter(workspace=workspace).values_list("name", flat=True))
    assert names == {"brand-new", "default"}


def test_a_run_can_name_its_project_by_session_id(api_client, workspace):
    project = TracingProject.objects.create(workspace=workspace, name="by-id")
    run = run_body()
    del run["session_name"]
    assert post_batch(api_client, post=[{**run, "session_id": str(project.id)}]).status_code == 202
    assert Run.objects.get(id=run["id"]).session == project


def test_post_runs_and_patch_runs_id_work_without_dotted_order(api_client):
    root_id, child_id = uuid.uuid4(), uuid.uuid4()
    created = api_client.post("/runs", {"id": str(root_id), "name": "root", "run_type": "chain",
                                        "inputs": {"x": 1}, "session_name": "legacy"}, format="json")
    assert created.status_code == 202, created.content
    child = api_client.post("/api/v1/runs", {"id": str(child_id), "name": "leaf", "run_type": "llm",
                                             "parent_run_id": str(root_id), "session_name": "legacy"}, format="json")
    assert child.status_code == 202, child.content
    patched = api_client.patch(f"/runs/{child_id}", {"outputs": {"y": 2}, "end_time": "2026-03-01T12:00:00Z"},
                               format="json")
    assert patched.status_code == 202, patched.content
    leaf = Run.objects.get(id=child_id)
    assert leaf.trace_id == root_id and leaf.parent_run_id == root_id and leaf.outputs == {"y": 2}
    assert leaf.dotted_order.startswith(Run.objects.get(id=root_id).dotted_order + ".")
    assert leaf.dotted_order.endswith(str(child_id)) and leaf.status == "success"


def test_unknown_fields_are_tolerated(api_client):
    run = run_body(serialized={"name": "x"}, some_future_field={"a": 1}, address=None, revision_id="r1")
    assert post_batch(api_client, post=[run]).status_code == 202
    assert Run.objects.filter(id=run["id"]).exists()


def test_attachment_and_feedback_parts_are_accepted_and_not_stored(api_client):
    run = run_body()
    body, headers = multipart([("post", run)])
    boundary = headers["content_type"].split("boundary=")[1]
    extra_parts = (f'--{boundary}\r\nContent-Disposition: form-data; name="attachment.{run["id"]}.image"\r\n'
                   f'Content-Type: image/png\r\n\r\n\x89PNG\r\n'
                   f'--{boundary}\r\nContent-Disposition: form-data; name="feedback.{uuid.uuid4()}"\r\n'
                   'Content-Type: application/json\r\n\r\n{"key": "ok"}\r\n').encode()
    body = body.replace(f"--{boundary}--".encode(), extra_parts + f"--{boundary}--".encode())
    response = api_client.generic("POST", "/runs/multipart", body, **headers)
    assert response.status_code == 202, response.content
    assert response.json()["ignored_parts"] == 2


def test_wrong_types_are_422_naming_the_run_and_the_field(api_client):
    run = run_body(start_time="yesterday", tags="not-a-list", inputs=["a"], total_tokens="many")
    response = post_batch(api_client, post=[run])
    assert response.status_code == 422
    locs = {tuple(error["loc"]) for error in response.json()["detail"]}
    assert locs == {("body", "post", 0, "start_time"), ("body", "post", 0, "tags"), ("body", "post", 0, "inputs"),
                    ("body", "post", 0, "total_tokens")}


def test_a_malformed_run_rejects_the_whole_batch_atomically(api_client):
    good_before, good_after = run_body(name="before"), run_body(name="after")
    bad = run_body(name="bad", run_type="spaceship")
    response = post_batch(api_client, post=[good_before, bad, good_after])
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["body", "post", 1, "run_type"], "type": "enum",
                                          "msg": "Input should be one of: chain, embedding, llm, parser, prompt, "
                                                 "retriever, tool"}]
    assert not Run.objects.exists() and not TracingProject.objects.exists()


def test_a_malformed_multipart_run_is_named_by_its_part(api_client):
    good, bad = run_body(), run_body()
    del bad["name"]
    response = post_multipart(api_client, [("post", good), ("post", bad)])
    assert response.status_code == 422
    assert response.json()["detail"] == [{"loc": ["body", f"post.{bad['id']}", "name"], "msg": "Field required",
                                          "type": "missing"}]
    assert not Run.objects.exists()


def test_a_dotted_order_that_contradicts_the_run_is_422(api_client):
    parent = run_body()
    child = run_body(parent=parent)
    child["parent_run_id"] = str(uuid.uuid4())
    response = post_batch(api_client, post=[parent, child])
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "post", 1, "dotted_order"]


def test_invalid_json_and_broken_multipart_are_422(api_client):
    assert api_client.post("/runs/batch", b"{nope", content_type="application/json").json()["detail"][0][
        "type"] == "json_invalid"
    response = api_client.generic("POST", "/runs/multipart", b"--b\r\nno-end",
                                  content_type="multipart/form-data; boundary=b")
    assert response.status_code == 422


def test_an_unknown_content_encoding_is_415(api_client):
    body, headers = multipart([("post", run_body())])
    response = api_client.generic("POST", "/runs/multipart", body, content_type=headers["content_type"],
                                  HTTP_CONTENT_ENCODING="br")
    assert response.status_code == 415 and "zstd" in response.json()["detail"]


def test_a_body_over_the_limit_is_413_before_anything_is_read(api_client, settings):
    settings.TRACE_BODY_MAX_BYTES = 1000
    body, headers = multipart([("post", run_body(inputs={"blob": "x" * 2000}))])
    response = api_client.generic("POST", "/runs/multipart", body, **headers)
    assert response.status_code == 413
    assert response.json() == {"detail": "Request body is too large: the limit for this route is 1000 bytes."}
    assert not Run.objects.exists()


def test_a_zstd_body_that_inflates_past_the_limit_is_413(api_client, settings):
    settings.TRACE_DECOMPRESSED_MAX_BYTES = 100_000
    body, headers = multipart([("post", run_body(inputs={"blob": "x" * 200_000}))], compress=True)
    assert len(body) < 100_000
    response = api_client.generic("POST", "/runs/multipart", body, **headers)
    assert response.status_code == 413
    assert "decompresses to more than 100000 bytes" in response.json()["detail"]


def test_corrupt_zstd_is_422(api_client):
    response = api_client.generic("POST", "/runs/multipart", zstandard.ZstdCompressor().compress(b"x")[:-3] + b"zz",
                                  content_type="multipart/form-data; boundary=b", HTTP_CONTENT_ENCODING="zstd")
    assert response.status_code == 422


def test_usage_metadata_becomes_token_counts(api_client):
    llm = run_body(run_type="llm", outputs={"usage_metadata": {"input_tokens": 7, "output_tokens": 5,
                                                               "total_tokens": 12, "total_cost": 0.0012}})
    post_batch(api_client, post=[llm])
    stored = Run.objects.get(id=llm["id"])
    assert (stored.prompt_tokens, stored.completion_tokens, stored.total_tokens) == (7, 5, 12)
    assert float(stored.total_cost) == 0.0012


def test_ingestion_needs_tracing_write(make_client, workspace):
    reader = make_client(workspace, permissions=["tracing:read"])
    assert post_batch(reader, post=[run_body()]).status_code == 403
    writer = make_client(workspace, permissions=["tracing:write"])
    assert post_batch(writer, post=[run_body()]).status_code == 202


def test_ingestion_without_or_with_a_wrong_key_is_401(client):
    assert post_batch(client, post=[run_body()]).status_code == 401
    client.defaults["HTTP_X_API_KEY"] = "lgk_nope_nope"
    assert post_batch(client, post=[run_body()]).status_code == 401


def test_ingesting_with_workspace_a_never_writes_into_b(api_client, outsider_client, workspace, other_workspace):
    theirs = run_body(session_name="shared-name")
    post_batch(outsider_client, post=[theirs])
    mine_first = run_body()
    response = post_batch(api_client, patch=[{**theirs, "outputs": {"stolen": True}}], post=[mine_first])
    assert response.status_code == 202
    stored = Run.objects.get(id=theirs["id"])
    assert stored.workspace == other_workspace and stored.outputs is None
    assert list(Run.objects.filter(workspace=workspace).values_list("id", flat=True)) == [uuid.UUID(mine_first["id"])]
    foreign_project = TracingProject.objects.get(workspace=other_workspace)
    mine = run_body()
    del mine["session_name"]
    response = post_batch(api_client, post=[{**mine, "session_id": str(foreign_project.id)}])
    assert response.status_code == 422 and response.json()["detail"][0]["loc"][-1] == "session_id"


def test_a_key_with_several_workspaces_writes_into_the_one_named_in_x_tenant_id(make_client, workspace,
                                                                                 other_workspace):
    client = make_client(other_workspace, workspaces=[workspace, other_workspace])
    run = run_body()
    assert post_batch(client, post=[run]).status_code == 202
    assert Run.objects.get(id=run["id"]).workspace == other_workspace
    ambiguous = make_client(workspace, workspaces=[workspace, other_workspace], tenant=False)
    assert post_batch(ambiguous, post=[run_body()]).status_code == 403


def test_a_later_post_or_patch_never_moves_a_run_to_another_project(api_client):
    run = run_body(session_name="first")
    post_batch(api_client, post=[run])
    post_batch(api_client, post=[{**run, "session_name": "second"}], patch=[{**run, "session_name": "third"}])
    assert Run.objects.get(id=run["id"]).session.name == "first"
    assert list(TracingProject.objects.values_list("name", flat=True)) == ["first"]


def test_a_child_without_dotted_order_whose_parent_is_unknown_is_422(api_client):
    response = api_client.post("/runs", {"id": str(uuid.uuid4()), "name": "orphan", "run_type": "tool",
                                         "parent_run_id": str(uuid.uuid4())}, format="json")
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["body", "parent_run_id"]


def test_a_patch_for_an_unknown_run_without_name_and_run_type_is_422(api_client):
    response = api_client.patch(f"/runs/{uuid.uuid4()}", {"outputs": {"x": 1}}, format="json")
    assert response.status_code == 422
    assert "does not exist yet" in response.json()["detail"][0]["msg"] and not Run.objects.exists()


def test_nul_characters_are_replaced_so_every_database_accepts_the_run(api_client):
    run = run_body(inputs={"text": "a\u0000b"}, error="bad\u0000byte")
    assert post_batch(api_client, post=[run]).status_code == 202
    stored = Run.objects.get(id=run["id"])
    assert stored.inputs == {"text": "a\ufffdb"} and stored.error == "bad\ufffdbyte"
