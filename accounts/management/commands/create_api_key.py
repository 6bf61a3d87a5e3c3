"""Create an API key (and its workspace if missing); print one JSON line."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.permissions import ALL_PERMISSIONS
from accounts.services import api_key_create, workspace_get_or_create
from core.exceptions import ServiceError


class Command(BaseCommand):
    help = 'Create an API key. Prints {"workspace_id": ..., "api_key": ...} as one JSON line.'

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, help="Workspace name; created when missing.")
        parser.add_argument("--permission", action="append", dest="permissions", choices=ALL_PERMISSIONS,
                            help="Repeat for several; all permissions when omitted.")
        parser.add_argument("--name", default="", help="A label for the key.")

    def handle(self, *args, workspace, permissions, name, **options):
        ws = workspace_get_or_create(name=workspace)
        try:
            _, raw_key = api_key_create(workspaces=[ws], permissions=permissions, name=name)
        except ServiceError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(json.dumps({"workspace_id": str(ws.id), "api_key": raw_key}))
