"""The `http` section of a project's langgraph.json, checked before anything is built.

The keys are langgraph-cli's `HttpConfig` schema. `app`, the `disable_*` flags and `cors` are honoured by the
revision's serving process (deployments/serving/custom_routes.py); the keys that tune what this service does not
have (custom auth's ordering, logging headers) are accepted with a warning, as the Agent Server ignores a key of a
feature it lacks.
"""

from __future__ import annotations

import re
from pathlib import Path

DISABLE_FLAGS = ("disable_assistants", "disable_threads", "disable_runs", "disable_store", "disable_mcp",
                 "disable_a2a", "disable_meta", "disable_ui", "disable_webhooks")
# Documented by the CLI's schema but with nothing to act on here: accepted, and the build log says so.
IGNORED = ("configurable_headers", "logging_headers", "middleware_order", "enable_custom_route_auth",
           "disable_event_streaming")
CORS_LISTS = ("allow_origins", "allow_methods", "allow_headers", "expose_headers")
_ATTR = re.compile(r"^[A-Za-z_][\w.]*$")
_MODULE = re.compile(r"^[A-Za-z_][\w.]*$")


class HttpConfigError(ValueError):
    """The `http` section is wrong; the message names the key."""


def check(raw: object, *, config_dir: Path, root: Path, warnings: list[str]) -> dict:
    """The `http` section (an empty dict when absent); warnings are appended. `app` stays relative to
    langgraph.json's directory, the serving process's working directory."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise HttpConfigError("\"http\" must be an object, e.g. {\"app\": \"./webapp.py:app\"}.")
    http = dict(raw)
    for key in http:
        if key in IGNORED:
            warnings.append(f"http.{key} is not supported by this server and is ignored.")
        elif key not in (*DISABLE_FLAGS, "app", "cors", "mount_prefix"):
            warnings.append(f"http.{key} is not a documented key of langgraph.json's \"http\"; it is ignored.")
    for flag in DISABLE_FLAGS:
        if flag in http and not isinstance(http[flag], bool):
            raise HttpConfigError(f"http.{flag} must be true or false, got {http[flag]!r}.")
    if http.get("app") is not None:
        _app(http["app"], config_dir, root)
    if http.get("cors") is not None:
        http["cors"] = _cors(http["cors"])
    prefix = http.get("mount_prefix")
    if prefix is not None and (not isinstance(prefix, str) or not re.fullmatch(r"(/[\w.~-]+)+", prefix)):
        raise HttpConfigError(f"http.mount_prefix must start with '/' and not end with '/', e.g. \"/my-api\"; "
                              f"got {prefix!r}.")
    return http


def _app(spec: object, config_dir: Path, root: Path) -> None:
    """`./path.py:attr` naming a file of the project, or `package.module:attr`."""
    if not isinstance(spec, str) or ":" not in spec:
        raise HttpConfigError(f"http.app: expected \"./path/to/webapp.py:app\" or \"package.module:app\", "
                              f"got {spec!r}.")
    target, _, attr = spec.rpartition(":")
    if not _ATTR.match(attr):
        raise HttpConfigError(f"http.app: {attr!r} is not a valid attribute name.")
    if not (target.endswith(".py") or "/" in target):
        if not _MODULE.match(target):
            raise HttpConfigError(f"http.app: {target!r} is neither a file path nor a module name.")
        return
    file = (config_dir / target).resolve()
    if file != root and root not in file.parents:
        raise HttpConfigError(f"http.app: {target} points outside the project.")
    if not file.is_file():
        raise HttpConfigError(f"http.app: the file {target} does not exist.")


def _cors(cors: object) -> dict:
    if not isinstance(cors, dict):
        raise HttpConfigError("http.cors must be an object, e.g. {\"allow_origins\": [\"https://example.com\"]}.")
    for key, value in cors.items():
        if key in CORS_LISTS:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise HttpConfigError(f"http.cors.{key} must be a list of strings, got {value!r}.")
        elif key == "allow_credentials":
            if not isinstance(value, bool):
                raise HttpConfigError(f"http.cors.allow_credentials must be true or false, got {value!r}.")
        elif key == "max_age":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise HttpConfigError(f"http.cors.max_age must be a number of seconds, got {value!r}.")
        elif key == "allow_origin_regex":
            _regex(value)
        else:
            raise HttpConfigError(f"http.cors.{key} is not a CORS setting (allowed: {', '.join(CORS_LISTS)}, "
                                  "allow_credentials, allow_origin_regex, max_age).")
    return dict(cors)


def _regex(value: object) -> None:
    if not isinstance(value, str):
        raise HttpConfigError(f"http.cors.allow_origin_regex must be a string, got {value!r}.")
    try:
        re.compile(value)
    except re.error as exc:
        raise HttpConfigError(f"http.cors.allow_origin_regex is not a valid regular expression: {exc}.") from None
