"""Encrypted fields fail closed instead of handing ciphertext on."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection, models

from core.fields import EncryptedTextField, UndecryptableValue


class Secretive(models.Model):
    secret = EncryptedTextField()

    class Meta:
        app_label = "core"


@pytest.fixture
def secretive_table(transactional_db):
    with connection.schema_editor() as editor:
        editor.create_model(Secretive)
    yield
    with connection.schema_editor() as editor:
        editor.delete_model(Secretive)


def test_a_value_round_trips_and_is_not_stored_in_clear(secretive_table):
    row = Secretive.objects.create(secret="canary-value")
    assert Secretive.objects.get(pk=row.pk).secret == "canary-value"
    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM core_secretive")
        assert "canary-value" not in cursor.fetchone()[0]


def test_a_value_encrypted_with_an_unknown_key_raises(secretive_table):
    foreign = Fernet(Fernet.generate_key()).encrypt(b"other").decode()
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO core_secretive (secret) VALUES (%s)", [foreign])
    with pytest.raises(UndecryptableValue, match="FIELD_ENCRYPTION_KEY"):
        Secretive.objects.get()
