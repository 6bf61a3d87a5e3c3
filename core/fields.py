"""Encrypted model fields that fail closed.

django-encrypted-model-fields returns the raw ciphertext when a value cannot be
decrypted (wrong or missing key). Handing ciphertext on as if it were the secret is
worse than failing, so these subclasses raise instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cryptography.fernet import InvalidToken
from encrypted_model_fields import fields as encrypted

if TYPE_CHECKING:
    # django-encrypted-model-fields ships no types: to mypy its fields are the text and char fields they
    # extend, holding str.
    from django.db.models import CharField as _EncryptedCharBase
    from django.db.models import TextField as _EncryptedTextBase
else:
    _EncryptedCharBase = encrypted.EncryptedCharField
    _EncryptedTextBase = encrypted.EncryptedTextField


class UndecryptableValue(Exception):
    """A stored secret could not be decrypted with any configured FIELD_ENCRYPTION_KEY."""


class _FailClosedMixin:
    def from_db_value(self, value, expression, connection):
        if value is None:
            return None
        try:
            return encrypted.decrypt_str(value)
        except InvalidToken:
            raise UndecryptableValue(
                f"{self.model.__name__}.{self.name} cannot be decrypted: "
                "FIELD_ENCRYPTION_KEY does not hold the key it was encrypted with."
            ) from None


class EncryptedTextField(_FailClosedMixin, _EncryptedTextBase):
    pass


class EncryptedCharField(_FailClosedMixin, _EncryptedCharBase):
    pass
