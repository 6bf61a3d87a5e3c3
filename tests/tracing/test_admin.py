"""The admin browses projects and runs read-only: the run tree, inputs and outputs, filters."""

from __future__ import annotations

import orjson
import pytest

from tests.tracing.support_wire import run_body
from tracing.models import Run, TracingProject

pytestmark = pytest.mark.django_db


@pytest.fixture
def trace(api_client):
    root = run_body(name="agent-root", inputs={"question": "secret-sauce?"})
    child = run_body(parent=root, name="tool-call", run_type="tool", error="kaboom", end_time="2026-03-01T12:00:01Z")
    grandchild = run_body(parent=child, name="llm-call", run_type="llm", outputs={"answer": "forty-two"})
    response = api_client.post("/runs/batch", orjson.dumps({"post": [root, child, grandchild]}),
                               content_type="application/json")
    assert response.status_code == 202
    return root, child, grandchild


def test_a_run_page_shows_its_tree_inputs_outputs_and_error(admin_client, trace):
    root, child, grandchild = trace
    page = admin_client.get(f"/admin/tracing/run/{child['id']}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("agent-root", "tool-call", "llm-call", "kaboom", "&quot;question&quot;: &quot;tool-call&quot;"):
        assert text in html
    for run_id in (root["id"], grandchild["id"]):
        assert f"/admin/tracing/run/{run_id}/change/" in html
    assert "forty-two" in admin_client.get(f"/admin/tracing/run/{grandchild['id']}/change/").content.decode()


def test_runs_are_filtered_by_project_status_run_type_and_time(admin_client, trace):
    project = TracingProject.objects.get()
    for query, expected in ((f"session__id__exact={project.id}", 3), ("status__exact=error", 1),
                            ("run_type__exact=llm", 1), ("start_time__year=2026&start_time__month=3", 3),
                            ("start_time__year=2025", 0)):
        page = admin_client.get(f"/admin/tracing/run/?{query}")
        assert page.status_code == 200, query
        assert page.context["cl"].result_count == expected, query


def test_projects_and_runs_cannot_be_added_changed_or_deleted(admin_client, trace):
    run = Run.objects.first()
    project = TracingProject.objects.get()
    assert admin_client.get("/admin/tracing/run/add/").status_code == 403
    assert admin_client.get("/admin/tracing/tracingproject/add/").status_code == 403
    assert admin_client.post(f"/admin/tracing/run/{run.id}/change/", {"name": "edited"}).status_code == 403
    assert admin_client.get(f"/admin/tracing/run/{run.id}/delete/").status_code == 403
    project_page = admin_client.get(f"/admin/tracing/tracingproject/{project.id}/change/")
    assert project_page.status_code == 200 and f"session__id__exact={project.id}" in project_page.content.decode()
    assert Run.objects.get(id=run.id).name != "edited"
