"""What `manage.py serve` sets up for a first run (core.registry.serve_setup): the demo workspace with its API key,
and the admin user."""

from __future__ import annotations

from accounts import services
from core.registry import serve_setup


@serve_setup("accounts.demo_credentials")
def demo_credentials(out) -> None:
    workspace, raw_key = services.demo_credentials_ensure()
    out.write(f"Demo workspace: {workspace.name} ({workspace.id})\n")
    out.write(f"Demo API key:   {raw_key}\n")


@serve_setup("accounts.admin_user")
def admin_user(out) -> None:
    username, password = services.admin_user_ensure()
    if password:
        out.write(f"Admin user:     {username} / {password} (shown once)\n")
    else:
        out.write(f"Admin user:     {username} (password unchanged)\n")
