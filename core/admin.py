"""Admin pieces shared by the apps."""

from __future__ import annotations

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that services write: the admin shows them (and runs actions), never adds or edits them.

    `allow_delete` keeps the admin's own delete for models whose rows may simply be removed.
    """

    allow_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.allow_delete and super().has_delete_permission(request, obj)
