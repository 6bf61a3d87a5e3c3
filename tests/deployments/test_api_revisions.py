"""Revisions, their logs, redeploy and interrupt, and source uploads through signed URLs."""

from __future__ import annotations

import io
import tarfile
import uuid

import pytest

from core.models import Job
from core.pagination import MAX_OFFSET
from deployments import services
from deployments.models import Revision, RevisionLog
from deployments.uploads import object_file
from tests.deployments.support_projects import tarball

pytestmark = pytest.mark.django_db


def new_revision(api_client, deployment, object_path=None):
    config = {"source_tarball_path": object_path or deployment["source_revision_config"]["source_tarball_path"]}
    response = api_client.patch(f"/v2/deployments/{deployment['id']}", {"source_revision_config": config},
                                format="json")
    assert response.status_code == 200
    return response.json()


def test_revisions_are_listed_newest_first_with_paging_and_a_status_filter(api_client, internal_deployment):
    deployment = internal_deployment()
    for _ in range(3):
        deployment = new_revision(api_client, deployment)
    base = f"/v2/deployments/{deployment['id']}/revisions"
    everything = api_client.get(base).json()["resources"]
    numbers = [Revision.objects.get(id=r["id"]).number for r in everything]
    assert numbers == [4, 3, 2, 1] and everything[0]["id"] == deployment["latest_revision_id"]
    first = api_client.get(base, {"limit": 1}).json()
    assert [r["id"] for r in first["resources"]] == [deployment["latest_revision_id"]] and first["offset"] == 1
    rest = api_client.get(base, {"limit": 10, "offset": 1}).json()
    assert [r["id"] for r in rest["resources"]] == [r["id"] for r in everything[1:]] and rest["offset"] == 4
    assert len(api_client.get(base, {"status": "SKIPPED"}).json()["resources"]) == 3
    assert len(api_client.get(base, {"status": "QUEUED,SKIPPED"}).json()["resources"]) == 4
    bad = api_client.get(base, {"status": "QUEUED,NOPE"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "status"]


def test_a_missing_revision_is_404(api_client, internal_deployment, outsider_client):
    deployment = internal_deployment()
    missing = uuid.uuid4()
    response = api_client.get(f"/v2/deployments/{deployment['id']}/revisions/{missing}")
    assert response.status_code == 404 and response.json() == {"detail": f"Revision ID {missing} not found."}
    foreign = outsider_client.get(f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}")
    assert foreign.json() == {"detail": f"Deployment ID {deployment['id']} not found."}


def test_interrupt_stops_a_revision_in_progress_and_its_job_then_does_nothing(api_client, internal_deployment,
                                                                               run_jobs):
    deployment = internal_deployment()
    url = f"/v2/deployments/{deployment['id']}/revisions/{deployment['latest_revision_id']}"
    response = api_client.post(f"{url}/interrupt")
    assert response.status_code == 200 and response.json()["status"] == "INTERRUPTED"
    again = api_client.post(f"{url}/interrupt")
    assert again.status_code == 400 and "INTERRUPTED" in again.json()["detail"]
    assert run_jobs() == ["deployments.build"]
    assert api_client.get(url).json()["status"] == "INTERRUPTED"


def test_redeploy_makes_a_new_revision_from_that_revisions_source(api_client, internal_deployment, uploaded, project):
    deployment = internal_deployment()
    first = deployment["latest_revision_id"]
    first_path = deployment["source_revision_config"]["source_tarball_path"]
    deployment = new_revision(api_client, deployment, uploaded(deployment["id"], tarball(project)))
    response = api_client.post(f"/v2/deployments/{deployment['id']}/revisions/{first}/redeploy")
    assert response.status_code == 200
    redeployed = response.json()
    assert redeployed["latest_revision_id"] not in (first, deployment["latest_revision_id"])
    assert redeployed["source_revision_config"]["source_tarball_path"] == first_path
    assert Revision.objects.get(id=deployment["latest_revision_id"]).status == "SKIPPED"


# --- POST /v2/deployments/{id}/revisions --------------------------------------------------------------------------
def create_revision(client, deployment_id, body):
    return client.post(f"/v2/deployments/{deployment_id}/revisions", body, format="json")


def test_creating_a_revision_answers_201_with_the_revision_and_queues_its_build(api_client, internal_deployment,
                                                                                 uploaded, project):
    deployment = internal_deployment()
    object_path = uploaded(deployment["id"], tarball(project))
    response = create_revision(api_client, deployment["id"], {"source_revision_config": {
        "source_tarball_path": object_path, "repo_ref": None}, "revision_source": "internal_source",
        "tracked_packages": ["langgraph:1.0"], "unknown": 1})
    assert response.status_code == 201, response.content
    revision = response.json()
    assert set(revision) == {"id", "created_at", "updated_at", "status", "source", "source_revision_config",
                             "status_message"}
    assert revision["status"] == "QUEUED" and revision["source"] == "internal_source"
    assert revision["status_message"] is None
    assert revision["source_revision_config"]["source_tarball_path"] == object_path
    # The rest comes from the latest revision, which the new one supersedes, as a PATCH would.
    assert revision["source_revision_config"]["langgraph_config_path"] == "langgraph.json"
    shown = api_client.get(f"/v2/deployments/{deployment['id']}").json()
    assert shown["latest_revision_id"] == revision["id"]
    assert Revision.objects.get(id=deployment["latest_revision_id"]).status == "SKIPPED"
    assert Revision.objects.get(id=revision["id"]).tracked_packages == ["langgraph:1.0"]
    assert Job.objects.filter(kind="deployments.build", payload__revision_id=revision["id"]).exists()


def test_creating_a_revision_always_makes_one_even_with_nothing_to_change(api_client, internal_deployment):
    deployment = internal_deployment()
    for body in ({}, {"source_revision_config": None}, {"source_revision_config": {"repo_ref": None}}):
        response = create_revision(api_client, deployment["id"], body)
        assert response.status_code == 201, response.content
    # A PATCH without any revision field makes none; the POST always made one.
    assert api_client.patch(f"/v2/deployments/{deployment['id']}", {}, format="json").status_code == 200
    assert Revision.objects.filter(deployment_id=deployment["id"]).count() == 4


@pytest.mark.parametrize("body, message", [
    ({"secrets": [{"name": "A", "value": "1"}]}, "PATCH"),
    ({"source_config": {"resource_spec": {"min_scale": 1}}}, "PATCH"),
    ({"revision_source": "github"}, "revision_source"),
    ({"source_revision_config": {"image_uri": "registry.example/agent:1"}}, "image_uri"),
    ({"source_revision_config": {"langgraph_config_path": "../outside.json"}}, "langgraph_config_path"),
    ({"source_revision_config": {"source_tarball_path": "../../etc/passwd"}}, "source_tarball_path"),
])
def test_a_revision_that_cannot_be_made_is_400_and_makes_none(api_client, internal_deployment, body, message):
    deployment = internal_deployment()
    response = create_revision(api_client, deployment["id"], body)
    assert response.status_code == 400 and message in response.json()["detail"], response.content
    assert Revision.objects.filter(deployment_id=deployment["id"]).count() == 1


def test_a_revision_needs_an_uploaded_tarball_on_an_internal_source_deployment(api_client, deploy_settings):
    deployment = api_client.post("/v2/deployments", {"name": "cli", "source": "internal_source"},
                                 format="json").json()
    response = create_revision(api_client, deployment["id"], {})
    assert response.status_code == 400 and "upload-url" in response.json()["detail"]


@pytest.mark.parametrize("body, loc", [
    ({"source_revision_config": "main"}, ["body", "source_revision_config"]),
    ({"tracked_packages": "langgraph"}, ["body", "tracked_packages"]),
    ({"revision_source": "ftp"}, ["body", "revision_source"]),
], ids=["config-not-an-object", "packages-not-a-list", "unknown-source"])
def test_a_revision_body_of_the_wrong_shape_is_422(api_client, internal_deployment, body, loc):
    deployment = internal_deployment()
    response = create_revision(api_client, deployment["id"], body)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc
    assert Revision.objects.filter(deployment_id=deployment["id"]).count() == 1


def test_creating_a_revision_is_404_elsewhere_409_while_deleting_and_403_for_a_reader(
        api_client, outsider_client, make_client, workspace, internal_deployment):
    deployment = internal_deployment()
    missing = uuid.uuid4()
    assert create_revision(api_client, missing, {}).json() == {"detail": f"Deployment ID {missing} not found."}
    assert create_revision(outsider_client, deployment["id"], {}).status_code == 404
    reader = make_client(workspace, permissions=["deployments:read"])
    assert create_revision(reader, deployment["id"], {}).status_code == 403
    api_client.delete(f"/v2/deployments/{deployment['id']}")
    response = create_revision(api_client, deployment["id"], {})
    assert response.status_code == 409 and "being deleted" in response.json()["detail"]
    assert Revision.objects.filter(deployment_id=deployment["id"]).count() == 1


# --- status_message -----------------------------------------------------------------------------------------------
def test_a_revision_carries_its_reason_only_once_it_failed_or_was_stopped(api_client, internal_deployment):
    deployment = internal_deployment()
    base = f"/v2/deployments/{deployment['id']}/revisions"
    first = deployment["latest_revision_id"]
    assert api_client.get(f"{base}/{first}").json()["status_message"] is None  # QUEUED
    api_client.post(f"{base}/{first}/interrupt")
    assert api_client.get(f"{base}/{first}").json()["status_message"] == "Interrupted through the API."
    second = create_revision(api_client, deployment["id"], {}).json()["id"]
    revision = Revision.objects.get(id=second)
    for status in ("AWAITING_BUILD", "BUILDING"):
        assert services.revision_transition(revision=revision, to=status, message=f"{status} message")
    assert api_client.get(f"{base}/{second}").json()["status_message"] is None
    services.revision_transition(revision=revision, to="BUILD_FAILED", message="No module named 'agent'")
    listed = {r["id"]: r for r in api_client.get(base).json()["resources"]}
    assert listed[second]["status"] == "BUILD_FAILED" and listed[second]["status_message"] == "No module named 'agent'"
    third = create_revision(api_client, deployment["id"], {}).json()["id"]
    create_revision(api_client, deployment["id"], {})
    skipped = api_client.get(f"{base}/{third}").json()
    assert skipped["status"] == "SKIPPED" and "Superseded by revision #4" in skipped["status_message"]


def _add_logs(revision_id, count, log_type="build"):
    revision = Revision.objects.get(id=revision_id)
    services.log_append(revision=revision, type=log_type, lines=[f"line {i}" for i in range(count)])
    services.log_append(revision=revision, type=log_type, lines=["boom"], level=RevisionLog.Level.ERROR)


def test_logs_page_by_cursor_in_either_order_and_filter(api_client, internal_deployment):
    deployment = internal_deployment()
    rid = deployment["latest_revision_id"]
    RevisionLog.objects.filter(revision_id=rid).delete()
    _add_logs(rid, 5)
    url = f"/v2/deployments/{deployment['id']}/revisions/{rid}/logs"
    first = api_client.get(url, {"type": "build", "limit": 3}).json()
    assert [e["message"] for e in first["logs"]] == ["line 0", "line 1", "line 2"]
    second = api_client.get(url, {"type": "build", "limit": 3, "offset": first["next_offset"]}).json()
    assert [e["message"] for e in second["logs"]] == ["line 3", "line 4", "boom"]
    # A follower that is up to date keeps its cursor.
    third = api_client.get(url, {"type": "build", "offset": second["next_offset"]}).json()
    assert third == {"logs": [], "next_offset": second["next_offset"]}
    newest = api_client.get(url, {"type": "build", "limit": 2, "order": "desc"}).json()
    assert [e["message"] for e in newest["logs"]] == ["boom", "line 4"]
    assert isinstance(newest["logs"][0]["timestamp"], int) and newest["logs"][0]["level"] == "ERROR"
    errors = api_client.get(url, {"type": "build", "level": "error"}).json()["logs"]
    assert [e["message"] for e in errors] == ["boom"]
    found = api_client.get(url, {"type": "build", "query": "LINE 3"}).json()["logs"]
    assert [e["message"] for e in found] == ["line 3"]
    assert api_client.get(url, {"type": "deploy"}).json()["logs"] == []
    for params, loc in (({}, ["query", "type"]), ({"type": "build", "limit": 1001}, ["query", "limit"]),
                        ({"type": "build", "order": "up"}, ["query", "order"]),
                        ({"type": "build", "start_time": "yesterday"}, ["query", "start_time"])):
        response = api_client.get(url, params)
        assert response.status_code == 422 and response.json()["detail"][0]["loc"] == loc


@pytest.mark.parametrize("params", [{"offset": 2**63}, {"offset": 10**30}, {"limit": 2**63}],
                         ids=["offset-2^63", "offset-10^30", "limit-2^63"])
def test_an_absurd_revision_offset_or_limit_is_422(api_client, internal_deployment, params):
    deployment = internal_deployment()
    response = api_client.get(f"/v2/deployments/{deployment['id']}/revisions", params)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", *params]
    assert api_client.get(f"/v2/deployments/{deployment['id']}/revisions",
                          {"offset": MAX_OFFSET}).json()["resources"] == []


@pytest.mark.parametrize(("params", "loc"), [
    ({"offset": str(2**63)}, "offset"), ({"offset": "9" * 19}, "offset"), ({"limit": 2**63}, "limit"),
    ({"start_time": "2026-02-30T00:00:00Z"}, "start_time"), ({"end_time": "0001-01-01T00:00:00+01:00"}, "end_time"),
    ({"start_time": "9" * 400}, "start_time"),
], ids=["cursor-2^63", "cursor-19-nines", "limit-2^63", "february-30th", "before-year-1-in-utc", "huge-epoch"])
def test_log_cursors_and_times_out_of_range_are_422_on_every_log_route(api_client, internal_deployment, params, loc):
    deployment = internal_deployment()
    rid = deployment["latest_revision_id"]
    response = api_client.get(f"/v2/deployments/{deployment['id']}/revisions/{rid}/logs", {"type": "build", **params})
    assert response.status_code == 422, response.content
    assert response.json()["detail"][0]["loc"] == ["query", loc]
    for url in (f"/v1/projects/{deployment['id']}/revisions/{rid}/build_logs",
                f"/v1/projects/{deployment['id']}/deploy_logs"):
        response = api_client.post(url, params, format="json")
        assert response.status_code == 422, response.content
        assert response.json()["detail"][0]["loc"] == ["body", loc]
    largest = api_client.get(f"/v2/deployments/{deployment['id']}/revisions/{rid}/logs",
                             {"type": "build", "offset": str(2**63 - 1)})
    assert largest.status_code == 200 and largest.json()["logs"] == []


def test_the_v1_log_endpoints_of_langgraph_cli_answer(api_client, internal_deployment):
    deployment = internal_deployment()
    rid = deployment["latest_revision_id"]
    _add_logs(rid, 2, "deploy")
    build = api_client.post(f"/v1/projects/{deployment['id']}/revisions/{rid}/build_logs",
                            {"order": "desc", "limit": 30}, format="json")
    assert build.status_code == 200 and build.json()["logs"][-1]["message"] == "Revision #1 created."
    deploy = api_client.post(f"/v1/projects/{deployment['id']}/deploy_logs",
                             {"limit": 7, "order": "desc", "level": "ERROR", "query": "boom",
                              "start_time": "2000-01-01T00:00:00Z", "end_time": "2999-01-01T00:00:00Z"}, format="json")
    assert [e["message"] for e in deploy.json()["logs"]] == ["[#1] boom"]
    per_revision = api_client.post(f"/v1/projects/{deployment['id']}/revisions/{rid}/deploy_logs",
                                   {"limit": 100, "order": "asc", "start_time": 946684800000}, format="json")
    assert [e["message"] for e in per_revision.json()["logs"]] == ["line 0", "line 1", "boom"]


def test_a_follower_using_next_offset_as_langgraph_cli_does_sees_each_line_once(api_client, internal_deployment):
    deployment = internal_deployment()
    rid = deployment["latest_revision_id"]
    RevisionLog.objects.filter(revision_id=rid).delete()
    url, cursor, seen = f"/v1/projects/{deployment['id']}/revisions/{rid}/build_logs", None, []
    for _ in range(2):
        _add_logs(rid, 1)
        body = {"order": "asc", "limit": 50, **({"offset": cursor} if cursor else {})}
        page = api_client.post(url, body, format="json").json()
        seen += [entry["message"] for entry in page["logs"]]
        cursor = page["next_offset"] or cursor  # the CLI's rule: a null keeps its previous cursor
    assert seen == ["line 0", "boom", "line 0", "boom"]


def test_the_deployment_wide_deploy_log_labels_each_line_with_its_revision(api_client, internal_deployment):
    deployment = internal_deployment()
    first = deployment["latest_revision_id"]
    second = create_revision(api_client, deployment["id"], {}).json()["id"]
    for rid in (first, second):
        RevisionLog.objects.filter(revision_id=rid).delete()
        _add_logs(rid, 1, "deploy")
    logs = api_client.post(f"/v1/projects/{deployment['id']}/deploy_logs", {"order": "asc"}, format="json").json()
    assert [(e["message"], e["revision_id"]) for e in logs["logs"]] == [
        ("[#1] line 0", first), ("[#1] boom", first), ("[#2] line 0", second), ("[#2] boom", second)]
    # One revision's own log needs no label.
    own = api_client.post(f"/v1/projects/{deployment['id']}/revisions/{second}/deploy_logs", {"order": "asc"},
                          format="json").json()
    assert [(e["message"], e["revision_id"]) for e in own["logs"]] == [("line 0", second), ("boom", second)]


# --- uploads ------------------------------------------------------------------------------------------------------
def _upload_url(api_client, deployment_id):
    body = api_client.post(f"/v2/deployments/{deployment_id}/upload-url", {}, format="json").json()
    return "/" + body["upload_url"].split("://", 1)[1].split("/", 1)[1], body


@pytest.fixture
def empty_deployment(api_client, deploy_settings):
    return api_client.post("/v2/deployments", {"name": "up", "source": "internal_source", "source_config": {},
                                               "source_revision_config": {}}, format="json").json()


def test_the_upload_url_is_on_this_service_and_authorised_by_itself(api_client, empty_deployment, project, settings,
                                                                     client):
    path, body = _upload_url(api_client, empty_deployment["id"])
    assert body["upload_url"].startswith(f"{settings.PUBLIC_BASE_URL}/v2/deployments/uploads/")
    assert body["object_path"].startswith(f"{empty_deployment['tenant_id']}/{empty_deployment['id']}/")
    data = tarball(project)
    tampered = path.replace("signature=", "signature=x")
    assert client.generic("PUT", tampered, data, content_type="application/gzip").status_code == 403
    other_object = path.replace(body["object_path"].rsplit("/", 1)[1], "0" * 32 + ".tar.gz")
    assert client.generic("PUT", other_object, data, content_type="application/gzip").status_code == 403
    # No API key at all: the URL is the authorisation.
    assert client.generic("PUT", path, data, content_type="application/gzip").status_code == 200
    assert object_file(body["object_path"]).is_file()
    assert client.generic("PUT", path, data, content_type="application/gzip").status_code == 409


def test_an_expired_upload_url_is_refused(api_client, empty_deployment, project, settings, client):
    path, _ = _upload_url(api_client, empty_deployment["id"])
    settings.DEPLOY_UPLOAD_URL_TTL_SECONDS = -1
    response = client.generic("PUT", path, tarball(project), content_type="application/gzip")
    assert response.status_code == 403 and "expired" in response.json()["detail"]


def _member(name, kind=tarfile.REGTYPE, linkname="", size=1):
    member = tarfile.TarInfo(name)
    member.type, member.linkname, member.size = kind, linkname, size if kind == tarfile.REGTYPE else 0
    return member


@pytest.mark.parametrize("member, reason", [
    (_member("../escape.py"), "'..'"),
    (_member("/etc/evil.py"), "absolute"),
    (_member("pkg/../../escape.py"), "'..'"),
    (_member("link", tarfile.SYMTYPE, "../../etc/passwd"), "outside"),
    (_member("abs-link", tarfile.SYMTYPE, "/etc/passwd"), "absolute"),
    (_member("hard", tarfile.LNKTYPE, "../outside"), "outside"),
    (_member("fifo", tarfile.FIFOTYPE), "only files"),
])
def test_an_unsafe_tarball_is_refused_and_not_stored(api_client, empty_deployment, project, client, member, reason):
    path, body = _upload_url(api_client, empty_deployment["id"])
    response = client.generic("PUT", path, tarball(project, extra=[member]), content_type="application/gzip")
    assert response.status_code == 400 and reason in response.json()["detail"]
    assert not object_file(body["object_path"]).exists()
    assert list(object_file(body["object_path"]).parent.glob("*")) == []


def test_too_many_files_or_too_many_bytes_are_refused(api_client, empty_deployment, project, client, settings):
    settings.DEPLOY_UPLOAD_MAX_FILES = 2
    path, _ = _upload_url(api_client, empty_deployment["id"])
    response = client.generic("PUT", path, tarball(project, extra=[_member("a.py"), _member("b.py")]),
                              content_type="application/gzip")
    assert response.status_code == 400 and "entries" in response.json()["detail"]
    settings.DEPLOY_UPLOAD_MAX_FILES, settings.DEPLOY_UPLOAD_MAX_UNPACKED_BYTES = 100, 1000
    path, _ = _upload_url(api_client, empty_deployment["id"])
    response = client.generic("PUT", path, tarball(project, extra=[_member("big.bin", size=5000)]),
                              content_type="application/gzip")
    assert response.status_code == 400 and "unpacks to more than" in response.json()["detail"]


def test_a_body_over_the_upload_limit_is_413(api_client, empty_deployment, client, settings):
    settings.DEPLOY_UPLOAD_MAX_BYTES = 100
    path, _ = _upload_url(api_client, empty_deployment["id"])
    response = client.generic("PUT", path, b"x" * 101, content_type="application/gzip")
    assert response.status_code == 413


def test_a_dot_env_in_the_tarball_is_dropped(api_client, empty_deployment, project, client):
    (project / ".env").write_text("OPENAI_API_KEY=sk-local-secret\n")
    (project / "sub").mkdir()
    (project / "sub" / ".env").write_text("X=1\n")
    path, body = _upload_url(api_client, empty_deployment["id"])
    assert client.generic("PUT", path, tarball(project), content_type="application/gzip").status_code == 200
    stored = object_file(body["object_path"]).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(stored)) as tar:
        names = tar.getnames()
    assert sorted(names) == ["graph.py", "langgraph.json"]
    assert b"sk-local-secret" not in stored


def test_a_tarball_path_of_another_deployment_or_not_uploaded_is_refused(api_client, empty_deployment, deploy_settings):
    other = api_client.post("/v2/deployments", {"name": "other", "source": "internal_source"}, format="json").json()
    _, body = _upload_url(api_client, other["id"])
    for path in (body["object_path"], "../../etc/passwd", f"{other['tenant_id']}/{empty_deployment['id']}/x.tar.gz"):
        response = api_client.patch(f"/v2/deployments/{empty_deployment['id']}",
                                    {"source_revision_config": {"source_tarball_path": path}}, format="json")
        assert response.status_code == 400, path
    _, own = _upload_url(api_client, empty_deployment["id"])
    response = api_client.patch(f"/v2/deployments/{empty_deployment['id']}",
                                {"source_revision_config": {"source_tarball_path": own["object_path"]}}, format="json")
    assert response.status_code == 400 and "PUT the tarball" in response.json()["detail"]


def test_upload_url_is_only_for_internal_source(api_client, deploy_settings, tmp_path):
    from tests.deployments.support_projects import git_repo, make_project

    url = git_repo(make_project(tmp_path / "repos" / "r"))
    deployment = api_client.post("/v2/deployments", {"name": "g", "source": "github",
                                                     "source_config": {"repo_url": url}}, format="json").json()
    response = api_client.post(f"/v2/deployments/{deployment['id']}/upload-url", {}, format="json")
    assert response.status_code == 400 and "internal_source" in response.json()["detail"]
