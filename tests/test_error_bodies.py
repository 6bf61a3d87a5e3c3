"""Error bodies are built in one module per wire format: core/rest_errors.py and core/protocol_errors.py."""

from __future__ import annotations

import ast

import pytest
from django.test import override_settings

from core import protocol_errors, rest_errors
from tests.support_processes import BASE_DIR

APP_DIRS = ["accounts", "agentauth", "agentserver", "chat", "config", "core", "deployments", "exports", "tracing"]
HOMES = {"core/rest_errors.py", "core/protocol_errors.py"}
# A dict literal with exactly these keys (and values that are not schemas) is an error body or a 422 item.
BODY_KEYS = [{"detail"}, {"error", "message"}, {"loc", "msg", "type"}]


def _hand_built_bodies(path) -> list[int]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict) or None in node.keys:
            continue
        keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
        is_schema = any(isinstance(value, ast.Dict) for value in node.values)
        if len(keys) == len(node.keys) and keys in BODY_KEYS and not is_schema:
            found.append(node.lineno)
    return found


def test_no_module_builds_an_error_body_by_hand():
    offenders = []
    for app in APP_DIRS:
        for path in sorted((BASE_DIR / app).rglob("*.py")):
            relative = path.relative_to(BASE_DIR).as_posix()
            if relative not in HOMES and "/migrations/" not in relative:
                offenders += [f"{relative}:{line}" for line in _hand_built_bodies(path)]
    assert offenders == []


def test_the_rest_body_bytes_are_what_django_writes_for_a_json_response():
    response = rest_errors.error_response(404, "Not Found")
    assert response.content == rest_errors.error_json("Not Found") == b'{"detail": "Not Found"}'


def test_a_protocol_error_body_names_its_code_and_message():
    assert protocol_errors.error_body("not_found", "No such thread.") == {"error": "not_found",
                                                                          "message": "No such thread."}


@pytest.mark.django_db
@override_settings(DEBUG=False)
def test_a_method_no_route_takes_is_405_in_the_rest_shape_with_allow(client):
    response = client.put("/api/v1/workspaces")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD, POST"
    assert response.content == b'{"detail": "Method Not Allowed"}'
