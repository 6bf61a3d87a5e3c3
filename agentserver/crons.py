"""Crons of the Agent Server API: their writes and reads, and the firing of due ticks (agentserver.jobs).

A cron keeps the body it was created with as its `payload` (as the Agent Server shows it) and creates a run of it
at every tick of its `schedule` (croniter's syntax: five fields, or six with seconds; UTC unless `timezone`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from agentruntime.models import ChatThread
from agentruntime.selectors import Caller
from agentserver import selectors, services
from agentserver.graphs import served_graph_ids
from agentserver.models import Cron
from agentserver.serializers import RunCreateSerializer
from core.exceptions import BadRequest, NotFound, RequestValidationError
from core.serializers import validated

log = logging.getLogger("agentserver.crons")
# What `select` may name, and what search may sort by (the Agent Server's CronSelectField and CronSortBy).
CRON_FIELDS = ("cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "timezone",
               "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled")
SORT_FIELDS = ("cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at")
# Keys of a cron's payload that describe the cron, not the runs it creates.
CRON_ONLY_KEYS = ("schedule", "end_time", "timezone", "enabled", "on_run_completed", "checkpoint_during")
# Crons fired per pass: a backlog is worked off over several passes.
FIRE_BATCH = 100


# --- Schedules ------------------------------------------------------------------------------------------------
def check_schedule(schedule: str, tz: str | None = None) -> None:
    """Raises RequestValidationError (422): not a cron expression croniter reads, or one that never fires (the 30th
    of February)."""
    problem = "" if croniter.is_valid(schedule) else ("Use the standard cron format (minute hour day_of_month month "
                                                       "day_of_week), optionally with a sixth field for seconds. "
                                                       "Example: '*/5 * * * *' for every 5 minutes.")
    if not problem:
        try:
            next_run_date(schedule, timezone.now(), tz)
        except CroniterError:
            problem = "It never fires."
    if problem:
        raise RequestValidationError.single(["body", "schedule"], f"Invalid cron schedule: '{schedule}'. {problem}")


def check_timezone(name: str | None) -> None:
    if name is None:
        return
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RequestValidationError.single(
            ["body", "timezone"], f"Invalid timezone: '{name}'. Use IANA timezone format (e.g. "
                                  "'America/New_York').") from None


def next_run_date(schedule: str, after: datetime, tz: str | None = None) -> datetime:
    """The schedule's first tick after `after` (in `tz`, UTC by default), in UTC."""
    base = after.astimezone(ZoneInfo(tz) if tz else UTC)
    return croniter(schedule, base).get_next(datetime).astimezone(UTC)


# --- Reads ----------------------------------------------------------------------------------------------------
def cron_not_found(cron_id: object) -> NotFound:
    return NotFound(f"Cron '{cron_id}' not found")


def cron_get(*, caller: Caller, cron_id: str) -> Cron:
    """Raises RequestValidationError: not a UUID. NotFound: missing or someone else's."""
    try:
        key = uuid.UUID(str(cron_id))
    except ValueError:
        raise RequestValidationError.single(["path", "cron_id"], "Invalid cron ID: must be a UUID") from None
    cron = Cron.objects.filter(**caller.owner_filter, pk=key).first()
    if cron is None:
        raise cron_not_found(cron_id)
    return cron


def _assistant_key(raw: str | None) -> uuid.UUID | None:
    """A search's assistant: a UUID, or a served graph id standing for the graph's system assistant."""
    if not raw:
        return None
    if raw in served_graph_ids():
        return selectors.system_assistant_id(raw)
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise RequestValidationError.single(["body", "assistant_id"],
                                            "Invalid assistant ID: must be a UUID or a graph id") from None


def _matching(*, caller: Caller, assistant_id: str | None, thread_id: str | None, enabled: bool | None,
              metadata: dict | None) -> tuple[QuerySet[Cron], dict | None]:
    rows = Cron.objects.filter(**caller.owner_filter)
    if (key := _assistant_key(assistant_id)) is not None:
        rows = rows.filter(assistant_id=key)
    if thread_id:
        rows = rows.filter(thread_id=thread_id)
    if enabled is not None:
        rows = rows.filter(enabled=enabled)
    return rows, metadata or None


def cron_search(*, caller: Caller, assistant_id: str | None = None, thread_id: str | None = None,
                enabled: bool | None = None, metadata: dict | None = None, sort_by: str = "created_at",
                sort_order: str = "desc", limit: int = 10, offset: int = 0) -> tuple[list[Cron], int]:
    """A page of the caller's matching crons and how many match. Metadata is matched in Python (JSON containment,
    as for assistants): one path for both databases."""
    rows, metadata = _matching(caller=caller, assistant_id=assistant_id, thread_id=thread_id, enabled=enabled,
                               metadata=metadata)
    sign = "-" if sort_order == "desc" else ""
    column = {"cron_id": "id"}.get(sort_by, sort_by)
    rows = rows.order_by(f"{sign}{column}", f"{sign}id")
    if metadata is None:
        return list(rows[offset:offset + limit]), rows.count()
    found = [cron for cron in rows if selectors.metadata_matches(cron.metadata, metadata)]
    return found[offset:offset + limit], len(found)


def cron_count(*, caller: Caller, assistant_id: str | None = None, thread_id: str | None = None,
               metadata: dict | None = None) -> int:
    rows, metadata = _matching(caller=caller, assistant_id=assistant_id, thread_id=thread_id, enabled=None,
                               metadata=metadata)
    if metadata is None:
        return rows.count()
    return sum(1 for cron in rows if selectors.metadata_matches(cron.metadata, metadata))


# --- Writes ---------------------------------------------------------------------------------------------------
def _with_cron_id(payload: dict, cron_id: uuid.UUID) -> dict:
    """The payload with `config.configurable.cron_id`, as the Agent Server keeps it (its runs see their cron)."""
    config = dict(payload.get("config") or {})
    config["configurable"] = {**(config.get("configurable") or {}), "cron_id": str(cron_id)}
    return {**payload, "config": config}


def cron_create(*, caller: Caller, thread_id: str | None, body: dict, data: dict) -> Cron:
    """A cron of the run `body` describes (`data`: the same, validated), on the thread or stateless.

    Raises:
        RequestValidationError: an invalid schedule or timezone. NotFound: unknown assistant or thread.
    """
    check_timezone(data.get("timezone"))
    check_schedule(data["schedule"], data.get("timezone"))
    try:
        assistant = services.assistant_for(caller=caller, raw=str(data["assistant_id"]))
    except RequestValidationError:
        raise NotFound(f"Assistant '{data['assistant_id']}' not found") from None
    thread = selectors.thread_get(caller=caller, thread_id=thread_id) if thread_id is not None else None
    cron_id = uuid.uuid4()
    payload = _with_cron_id({**body, "assistant_id": str(assistant.assistant_id)}, cron_id)
    return Cron.objects.create(
        id=cron_id, **caller.owner_fields, assistant_id=assistant.assistant_id,
        thread_id=thread.pk if thread is not None else None,
        schedule=data["schedule"], timezone=data.get("timezone"), end_time=data.get("end_time"),
        next_run_date=next_run_date(data["schedule"], timezone.now(), data.get("timezone")),
        on_run_completed=None if thread is not None else data.get("on_run_completed") or "delete",
        enabled=data.get("enabled", True), payload=payload, metadata=data.get("metadata") or {})


def cron_update(*, cron: Cron, body: dict, data: dict) -> Cron:
    """Change what `body` names (`data`: the same, validated); `end_time: null` clears it, metadata is merged, and
    the body is merged into the payload. A new schedule or timezone starts from now.

    Raises:
        BadRequest: an empty body. RequestValidationError: an invalid schedule or timezone.
    """
    if not body:
        raise BadRequest("Request body cannot be empty")
    fields = ["payload", "updated_at"]
    if "schedule" in data or "timezone" in data:
        cron.schedule = data.get("schedule") or cron.schedule
        cron.timezone = data["timezone"] if "timezone" in data else cron.timezone
        check_timezone(cron.timezone)
        check_schedule(cron.schedule, cron.timezone)
        cron.next_run_date = next_run_date(cron.schedule, timezone.now(), cron.timezone)
        fields += ["schedule", "timezone", "next_run_date"]
    for name in ("end_time", "enabled", "on_run_completed"):
        if name in data and (data[name] is not None or name == "end_time"):
            setattr(cron, name, data[name])
            fields.append(name)
    if data.get("metadata") is not None:
        cron.metadata = {**cron.metadata, **data["metadata"]}
        fields.append("metadata")
    cron.payload = _with_cron_id({**cron.payload, **body, "assistant_id": cron.payload.get("assistant_id")}, cron.id)
    # Only the fields changed: a worker firing the cron meanwhile moves next_run_date, which must stay moved.
    cron.save(update_fields=fields)
    return cron


def cron_delete(*, cron: Cron) -> None:
    cron.delete()


# --- Firing ---------------------------------------------------------------------------------------------------
def _owner(cron: Cron) -> Caller:
    return Caller(kind=cron.owner_kind, workspace=cron.workspace, user=cron.user)


def run_body(cron: Cron) -> dict:
    """The run creation a tick makes: the payload without the cron's own keys, the cron's metadata under the
    payload's, and (stateless) whether the run's thread is kept."""
    body = {k: v for k, v in cron.payload.items() if k not in CRON_ONLY_KEYS}
    body["metadata"] = {**cron.metadata, **(body.get("metadata") or {})}
    if cron.thread_id is None:
        body["on_completion"] = "keep" if cron.on_run_completed == "keep" else "delete"
    return validated(RunCreateSerializer, body)


def crons_due(*, now: datetime, limit: int = FIRE_BATCH) -> list[Cron]:
    """Enabled crons whose next tick has come, and whose end (if any) has not passed."""
    return list(Cron.objects.filter(Q(end_time__isnull=True) | Q(end_time__gte=now), enabled=True,
                                    next_run_date__lte=now)
                .select_related("workspace", "user").order_by("next_run_date")[:limit])


def cron_fire(*, cron: Cron, now: datetime) -> bool:
    """Claim the cron's tick and queue its run; False when another worker claimed it first.

    The claim moves `next_run_date` from the tick this worker read to the first tick after `now`, in one UPDATE
    that only one worker can win, in the transaction that creates the run: one run per tick, whatever the number of
    workers, and ticks missed while no worker ran fire once. A run that cannot be created (its thread is busy and
    the strategy rejects, its assistant was deleted) is logged and the tick is spent, as on the Agent Server.
    """
    if cron.thread_id is not None and not ChatThread.objects.filter(pk=cron.thread_id).exists():
        Cron.objects.filter(pk=cron.pk).delete()  # its thread was deleted by the chat page
        return False
    try:
        following: datetime | None = next_run_date(cron.schedule, now, cron.timezone)
    except CroniterError:
        following = None  # no tick after this one: it is the last
    with transaction.atomic():
        claimed = Cron.objects.filter(pk=cron.pk, enabled=True, next_run_date=cron.next_run_date).update(
            next_run_date=following)
        if not claimed:
            return False
        try:
            with transaction.atomic():
                services.run_create(caller=_owner(cron), thread_id=cron.thread_id, data=run_body(cron))
        except Exception:
            log.exception("cron %s: its run could not be created", cron.pk)
    return True


def crons_fire_due(*, now: datetime | None = None) -> int:
    """Fire every due cron once; how many ticks this worker fired."""
    now = now or timezone.now()
    return sum(cron_fire(cron=cron, now=now) for cron in crons_due(now=now))
