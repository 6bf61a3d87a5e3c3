"""Re-encrypt every encrypted field value under the first FIELD_ENCRYPTION_KEY (key rotation).

Rotation: put the new key first in FIELD_ENCRYPTION_KEY (`NEW,OLD`), restart, run this command
until it reports 0 unreadable values, then drop OLD. The command is idempotent and resumable: a
value already under the first key is skipped, and each row is rewritten by a conditional UPDATE
on its old ciphertext, so a row changed meanwhile is left for the next run. Plaintext never
leaves the cryptography library: ciphertexts are rotated with MultiFernet.rotate.
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast
from encrypted_model_fields.fields import EncryptedMixin


class Command(BaseCommand):
    help = "Re-encrypt every encrypted field value with the first FIELD_ENCRYPTION_KEY."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--dry-run", action="store_true", help="Count what would change; write nothing.")

    def handle(self, *args, batch_size: int, dry_run: bool, **options):
        keys = [Fernet(key) for key in settings.FIELD_ENCRYPTION_KEY]
        primary, every = keys[0], MultiFernet(keys)
        tables = set(connection.introspection.table_names())
        unreadable_total = 0
        for model, field in encrypted_fields(tables):
            counts = rotate_field(model, field, primary=primary, every=every, batch_size=batch_size,
                                  dry_run=dry_run)
            unreadable_total += counts["unreadable"]
            self.stdout.write(f"{model._meta.label}.{field.name}: {counts['rotated']} re-encrypted, "
                              f"{counts['current']} already current, {counts['unreadable']} unreadable")
        if unreadable_total:
            raise CommandError(f"{unreadable_total} value(s) could not be decrypted with any configured key; "
                               "keep the old keys until they are fixed.")


def encrypted_fields(tables: set[str]):
    for model in apps.get_models():
        meta = model._meta
        if not meta.managed or meta.proxy or meta.db_table not in tables:
            continue
        for field in meta.concrete_fields:
            if isinstance(field, EncryptedMixin):
                yield model, field


def rotate_field(model, field, *, primary: Fernet, every: MultiFernet, batch_size: int, dry_run: bool) -> dict:
    counts = {"rotated": 0, "current": 0, "unreadable": 0}
    manager = model._base_manager
    # Cast to plain text so the field's own decryption does not run (and cannot fail closed here).
    rows = manager.annotate(_raw=Cast(field.name, TextField())).filter(_raw__isnull=False).order_by("pk")
    last_pk = None
    while True:
        page = rows.filter(pk__gt=last_pk) if last_pk is not None else rows
        batch = list(page.values_list("pk", "_raw")[:batch_size])
        if not batch:
            return counts
        for pk, raw in batch:
            counts[_rotate_one(manager, field, pk, raw, primary=primary, every=every, dry_run=dry_run)] += 1
        last_pk = batch[-1][0]


def _rotate_one(manager, field, pk, raw: str, *, primary: Fernet, every: MultiFernet, dry_run: bool) -> str:
    token = raw.encode()
    try:
        primary.decrypt(token)
        return "current"
    except InvalidToken:
        pass
    try:
        rotated = every.rotate(token).decode()
    except InvalidToken:
        return "unreadable"
    if not dry_run:
        _replace_ciphertext(manager.model, field, pk, old=raw, new=rotated)
    return "rotated"


def _replace_ciphertext(model, field, pk, *, old: str, new: str) -> None:
    # Raw SQL: the library's get_db_prep_save would encrypt the new ciphertext (or an expression) again.
    quote = connection.ops.quote_name
    pk_field = model._meta.pk
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(model._meta.db_table)} SET {quote(field.column)} = %s "
            f"WHERE {quote(pk_field.column)} = %s AND {quote(field.column)} = %s",
            [new, pk_field.get_db_prep_value(pk, connection), old],
        )
