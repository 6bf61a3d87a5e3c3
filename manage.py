#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError as exc:
        # A database that was never created: one line with the command that creates it, not psycopg's traceback.
        from django.conf import settings

        from core.database_setup import missing_database_message

        message = missing_database_message(exc, settings.DATABASES["default"])
        if message is None:
            raise
        sys.exit(message)


if __name__ == "__main__":
    main()
