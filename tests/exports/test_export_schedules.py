"""Scheduled exports: children per closed window, in order, a few at a time, with source_bulk_export_id."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.registry import PERIODICS
from exports.bulk_exports import services as export_services
from exports.bulk_exports.models import BulkExport
from tests.exports.support_exports import DAY1, EXPORTS_URL, create_destination, drain, export_body, seed_trace_runs
from tests.exports.support_files import parquet_keys

pytestmark = pytest.mark.usefixtures("egress_loopback")


def create_schedule(client, destination, project, hours: int) -> dict:
    body = export_body(destination, project, interval_hours=hours)
    del body["end_time"]
    response = client.post(EXPORTS_URL, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_schedule_spawns_one_child_per_closed_window_a_few_at_a_time(api_client, workspace, project, s3, writer,
                                                                      settings):
    settings.EXPORT_SCHEDULE_MAX_PENDING_CHILDREN = 2
    settings.EXPORT_SCHEDULE_GRACE_SECONDS = 600
    seed_trace_runs(workspace, project, days=3, per_day=4, minutes_apart=60)  # 00:00 .. 03:00 each day
    destination = create_destination(api_client, s3, writer)
    schedule = create_schedule(api_client, destination, project, hours=24)
    assert (schedule["status"], schedule["interval_hours"], schedule["end_time"]) == ("IntervalScheduled", 24, None)
    assert api_client.get(f"{EXPORTS_URL}/{schedule['id']}/runs").json() == []

    # Three days later plus 5 minutes: windows 0 and 1 are due (closed + grace), window 2 is within its grace.
    now = DAY1 + timedelta(days=3, minutes=5)
    assert export_services.schedules_spawn(now=now) == 2
    assert export_services.schedules_spawn(now=now) == 0  # two unfinished children: wait for them
    children = BulkExport.objects.filter(source_bulk_export_id=schedule["id"]).order_by("start_time")
    assert [(c.start_time, c.end_time) for c in children] == [(DAY1, DAY1 + timedelta(days=1)),
                                                              (DAY1 + timedelta(days=1), DAY1 + timedelta(days=2))]
    drain()
    assert export_services.schedules_spawn(now=now) == 0  # window 2 closes at +3 days, due 10 minutes later
    assert export_services.schedules_spawn(now=now + timedelta(minutes=6)) == 1
    drain()

    listed = [e for e in api_client.get(EXPORTS_URL).json() if e["source_bulk_export_id"] == schedule["id"]]
    assert len(listed) == 3 and {e["status"] for e in listed} == {"Completed"}
    runs = api_client.get(f"{EXPORTS_URL}/runs?source_bulk_export_id={schedule['id']}").json()
    assert [r["start_time"][:10] for r in runs] == ["2026-03-01", "2026-03-02", "2026-03-03"]
    assert [r["metadata"]["result"]["rows_written"] for r in runs] == [4, 4, 4]
    assert len(parquet_keys(s3)) == 3
    assert api_client.get(f"{EXPORTS_URL}/{schedule['id']}").json()["status"] == "IntervalScheduled"


def test_a_schedule_far_in_the_past_never_spawns_hundreds_at_once(api_client, project, s3, writer, settings):
    settings.EXPORT_SCHEDULE_MAX_PENDING_CHILDREN = 3
    destination = create_destination(api_client, s3, writer)
    schedule = create_schedule(api_client, destination, project, hours=1)  # ~6000 windows are due by now
    PERIODICS["exports.spawn_scheduled"].func()
    children = BulkExport.objects.filter(source_bulk_export_id=schedule["id"]).order_by("start_time")
    assert [c.start_time for c in children] == [DAY1 + timedelta(hours=i) for i in range(3)]


def test_cancelling_a_schedule_keeps_the_children_it_spawned(api_client, project, s3, writer):
    destination = create_destination(api_client, s3, writer)
    schedule = create_schedule(api_client, destination, project, hours=24)
    export_services.schedules_spawn(now=DAY1 + timedelta(days=1, hours=1))
    response = api_client.patch(f"{EXPORTS_URL}/{schedule['id']}", {"status": "Cancelled"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "Cancelled"
    child = BulkExport.objects.get(source_bulk_export_id=schedule["id"])
    assert child.status == "Created"
    assert export_services.schedules_spawn(now=DAY1 + timedelta(days=30)) == 0
