"""The agent runtime's data: checkpoints, threads, runs, the event log, interrupts and the store.

Every table keeps the `chat_` name it had when these were the chat app's models (db_table below): moving them to this
app changed Django's state only (agentruntime/migrations/0001_initial.py,
chat/migrations/0012_moved_to_agentruntime.py).

The first three models are the LangGraph checkpoint store behind agentruntime/checkpointer/saver.py; they are
written and read only through DjangoCheckpointSaver, never by views or services directly.
"""

from __future__ import annotations

from django.db import models

# --- Checkpoints (agentruntime/checkpointer/saver.py) -----------------------------------------------------------
# The layout follows langgraph-checkpoint-postgres: a row per checkpoint holding its small values
# inline, channel values by (channel, version) in CheckpointBlob so an unchanged channel is stored
# once, and the pending writes of each checkpoint in CheckpointWrite. Everything is keyed by
# (thread_id, checkpoint_ns) because subgraphs (a deep agent's subagents) checkpoint into the same
# thread under their own namespace.


class Checkpoint(models.Model):
    thread_id = models.CharField(max_length=255)
    checkpoint_ns = models.TextField(blank=True, default="")
    # uuid6 strings: sorting them sorts checkpoints oldest to newest.
    checkpoint_id = models.CharField(max_length=64)
    parent_checkpoint_id = models.CharField(max_length=64, null=True, blank=True)
    # Copied out of metadata so delete_for_runs finds a run's checkpoints through an index.
    run_id = models.CharField(max_length=255, null=True, blank=True, db_index=True)
    # The checkpoint serialised by the saver's serde, with its primitive channel values inline.
    type = models.CharField(max_length=32)
    checkpoint = models.BinaryField()
    metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "chat_checkpoint"
        constraints = [
            # Also the index for "latest checkpoint of a namespace" (ORDER BY checkpoint_id DESC).
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id"], name="chat_checkpoint_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_ns}/{self.checkpoint_id}"


class CheckpointBlob(models.Model):
    thread_id = models.CharField(max_length=255)
    checkpoint_ns = models.TextField(blank=True, default="")
    channel = models.TextField()
    version = models.CharField(max_length=64)
    # "empty" (with no blob) marks a channel that has a version but no value.
    type = models.CharField(max_length=32)
    blob = models.BinaryField(null=True)

    class Meta:
        db_table = "chat_checkpointblob"
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "channel", "version"], name="chat_checkpointblob_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_ns}/{self.channel}@{self.version}"


class CheckpointWrite(models.Model):
    thread_id = models.CharField(max_length=255)
    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.CharField(max_length=64)
    task_id = models.CharField(max_length=255)
    task_path = models.TextField(blank=True, default="")
    # Position in the task's writes; errors, interrupts and resumes use fixed negative indexes
    # (WRITES_IDX_MAP) so that a retry overwrites them instead of adding a row.
    idx = models.IntegerField()
    channel = models.TextField()
    type = models.CharField(max_length=32)
    blob = models.BinaryField()

    class Meta:
        db_table = "chat_checkpointwrite"
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                name="chat_checkpointwrite_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.checkpoint_ns}/{self.checkpoint_id}/{self.task_id}#{self.idx}"


# --- Threads, runs and the event log (the streaming chat) -----------------------------------------
# A thread belongs to the first caller that created state for it (an API key's workspace, a logged-in
# user or the shared anonymous owner). Every protocol event of every run is stored in ChatEvent before
# any subscriber sees it; `seq` is handed out from ChatThread.last_seq in the inserting transaction,
# so two processes appending to one thread can never produce the same number.

from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from core.models import BaseModel  # noqa: E402


class ChatThread(BaseModel):
    class OwnerKind(models.TextChoices):
        WORKSPACE = "workspace"
        USER = "user"
        ANONYMOUS = "anonymous"

    # Client-minted (a UUID in the examples), so any short printable string is accepted.
    id = models.CharField(max_length=255, primary_key=True)
    owner_kind = models.CharField(max_length=16, choices=OwnerKind.choices)
    workspace = models.ForeignKey(
        "accounts.Workspace", null=True, blank=True, on_delete=models.CASCADE, related_name="chat_threads"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="chat_threads"
    )
    title = models.CharField(max_length=200, blank=True)
    # The served graph (its langgraph.json name) the thread's last run used: state reads go through it. Empty
    # until the first run, and for a name no longer served: the first served graph.
    graph_name = models.CharField(max_length=255, blank=True, default="")
    # True once a checkpoint exists (POST /state or a run): only such threads are listed.
    has_state = models.BooleanField(default=False)
    last_seq = models.BigIntegerField(default=0)
    # Retention dropped every event up to this seq: an older cursor gets 410 cursor_expired.
    expired_through_seq = models.BigIntegerField(default=0)
    # The Agent Server API's thread fields (agentserver/): free-form metadata the caller searches by, and the
    # time-to-live it asked for ({"strategy": "delete", "ttl": minutes}) with the moment that makes it expire.
    metadata = models.JSONField(default=dict, blank=True)
    ttl = models.JSONField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "chat_chatthread"
        indexes = [
            models.Index(fields=["owner_kind", "workspace", "user", "-updated_at"], name="chat_thread_owner_idx"),
            # The TTL sweep (agentserver/jobs.py) looks for expired threads.
            models.Index(fields=["expires_at"], name="chat_thread_expiry_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                name="chat_thread_owner_consistent",
                condition=(
                    models.Q(owner_kind="workspace", workspace__isnull=False, user__isnull=True)
                    | models.Q(owner_kind="user", workspace__isnull=True, user__isnull=False)
                    | models.Q(owner_kind="anonymous", workspace__isnull=True, user__isnull=True)
                ),
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.id


class ChatRun(BaseModel):
    class Status(models.TextChoices):
        # Queued (the Agent Server API's runs, and every run when only run_worker executes): an executor claims it.
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"
        INTERRUPTED = "interrupted"

    id = models.UUIDField(primary_key=True)
    thread = models.ForeignKey(ChatThread, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    error = models.TextField(blank=True)
    # The identity of the process executing the run (core/process_identity.py: stable across a supervised restart) and
    # its unique instance ("host:pid:token"); heartbeat_at is refreshed while it is alive.
    worker = models.CharField(max_length=255, blank=True)
    worker_instance = models.CharField(max_length=255, blank=True, default="")
    heartbeat_at = models.DateTimeField(default=timezone.now)
    # The thread's last seq when the run was created: its own events all come after it.
    start_seq = models.BigIntegerField(default=0)
    # Cancellation is a flag any process can set; the executing process polls it.
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # --- What an executor needs to claim and execute a queued run (agentruntime/runs/queue.py) ---
    class Kind(models.TextChoices):
        # Started by run.start or input.respond: astream_events v3, protocol events only.
        PROTOCOL = "protocol"
        # Started through the Agent Server API: its SSE frames (its stream modes) are stored beside protocol events.
        AGENT_SERVER = "agent_server"

    # What differs between the kinds is agentruntime/runs/kinds.py's.
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PROTOCOL)
    # The served graph and the Agent Server assistant the run executes.
    graph_name = models.CharField(max_length=255, blank=True, default="")
    assistant_id = models.CharField(max_length=64, blank=True, default="")
    # The Agent Server's run kwargs (input, command, config, context, stream_mode, interrupt_before/after, webhook,
    # subgraphs, resumable, durability, checkpoint) and the run's metadata, as the API shows them.
    kwargs = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    multitask_strategy = models.CharField(max_length=16, blank=True, default="")
    # Not claimed before this moment (after_seconds).
    available_at = models.DateTimeField(null=True, blank=True)
    # 1, or 2 once the run was retried after its executor died before checkpointing anything.
    attempt = models.PositiveSmallIntegerField(default=1)

    class Meta:
        db_table = "chat_chatrun"
        constraints = [
            # "No silent interleaving": at most one active run per thread, enforced by the database.
            models.UniqueConstraint(
                fields=["thread"], condition=models.Q(status="running"), name="chat_run_one_active_per_thread"
            ),
        ]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="chat_run_sweep_idx"),
                   models.Index(fields=["status", "created_at"], name="chat_run_queue_idx"),
                   models.Index(fields=["worker", "status"], name="chat_run_worker_idx")]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class ChatEvent(models.Model):
    thread = models.ForeignKey(ChatThread, on_delete=models.CASCADE, related_name="events")
    run = models.ForeignKey(ChatRun, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    # What subscriptions match on: the protocol channel ("messages", "custom:<name>", …) and the namespace
    # as a JSON list. `payload` is the whole event as sent on the wire (JSON text, seq included).
    channel = models.CharField(max_length=255)
    namespace = models.TextField(default="[]")
    payload = models.TextField()

    class Meta:
        db_table = "chat_chatevent"
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="chat_event_thread_seq")]

    def __str__(self) -> str:
        return f"{self.thread_id}#{self.seq} {self.channel}"


class ChatInterrupt(models.Model):
    """An interrupt of a thread that a person answered (`input.respond`).

    Answering claims the row with a conditional update (`answered_at IS NULL`) in the transaction that registers
    the resuming run: of two answers to one interrupt, exactly one resumes the thread.
    """

    thread = models.ForeignKey(ChatThread, on_delete=models.CASCADE, related_name="interrupts")
    interrupt_id = models.CharField(max_length=255)
    # Where the interrupt was raised (a subagent's namespace for its own tool calls), as a JSON list.
    namespace = models.TextField(default="[]")
    # The answer, when it was given, and the run it resumed the thread with (kept answered if that run is deleted).
    response = models.JSONField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    run = models.ForeignKey(ChatRun, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="answered_interrupts")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "chat_chatinterrupt"
        constraints = [models.UniqueConstraint(fields=["thread", "interrupt_id"], name="chat_interrupt_unique")]

    def __str__(self) -> str:
        return f"{self.thread_id}/{self.interrupt_id}"


# --- The LangGraph store (agentruntime/store/django_store.py)
# ----------------------------------------------------------


class StoreItem(models.Model):
    """One item of a LangGraph store: a JSON object under (scope, namespace, key), written only through DjangoStore.

    `scope` separates stores that share the table: each owner's (agentruntime/access.py's Caller.store_scope), so a
    deployment's callers and the deep agent's owners never see each other's items.
    """

    scope = models.CharField(max_length=255)
    # The namespace's labels joined by "." (LangGraph forbids a "." inside a label), as PostgresStore keeps it.
    namespace = models.TextField()
    key = models.TextField()
    value = models.JSONField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # store.ttl / put's `ttl`: the item is invisible from expires_at on, and the sweep deletes it; a read with
    # refresh_on_read moves expires_at to ttl_minutes from then. Both None: the item never expires.
    expires_at = models.DateTimeField(null=True, blank=True)
    ttl_minutes = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "chat_storeitem"
        constraints = [
            models.UniqueConstraint(fields=["scope", "namespace", "key"], name="chat_storeitem_unique"),
        ]
        # With the id: a search's page (most recently updated first, ties by id) is read off the index, stopping
        # at its limit, instead of sorting every item of the scope.
        indexes = [models.Index(fields=["scope", "updated_at", "id"], name="chat_storeitem_recent"),
                   models.Index(fields=["expires_at"], name="chat_storeitem_expires",
                                condition=models.Q(expires_at__isnull=False))]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.key}"


class StoreVector(models.Model):
    """The embedding of one indexed field of a StoreItem (store.index), as float32 bytes: search with a `query` scores
    them exactly, in batches (agentruntime/store/vectors.py), on both databases alike. An item has one per embedded
    text."""

    item = models.ForeignKey(StoreItem, on_delete=models.CASCADE, related_name="vectors")
    # The field path the text came from (`$`, `content`, `tags.0`): as LangGraph names it.
    field = models.TextField()
    vector = models.BinaryField()

    class Meta:
        db_table = "chat_storevector"

    def __str__(self) -> str:
        return f"{self.item_id}:{self.field}"
