"""A real OAuth 2 authorization server on loopback: authlib's AuthorizationServer in a small Flask app.

authlib's own grant classes do the protocol work (authorization code with PKCE S256 via its
CodeChallenge extension, refresh tokens, client authentication, redirect_uri matching); this
module only stores clients, codes and tokens in memory. Consent is given automatically for one
test user ("alice"), or refused when told to. The token endpoint counts its requests and can be
told to answer 500 or to stall, so that the service's failure paths meet a real server.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from dataclasses import dataclass, field

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import ClientMixin, TokenMixin, grants
from authlib.oauth2.rfc6749.errors import OAuth2Error
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from tests.support_processes import free_port

ACCESS_TOKEN_PREFIX = "canary-access-"
REFRESH_TOKEN_PREFIX = "canary-refresh-"


@dataclass
class User:
    id: int
    name: str


ALICE = User(1, "alice")


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str = field(repr=False)
    redirect_uris: list[str] = field(default_factory=list)
    scope: str = "read write admin"

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.redirect_uris[0]

    def get_allowed_scope(self, scope):
        allowed = set(self.scope.split())
        return " ".join(s for s in (scope or "").split() if s in allowed)

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, self.client_secret)

    def check_endpoint_auth_method(self, method, endpoint):
        if endpoint == "token":
            return method == ("client_secret_basic" if self.client_secret else "none")
        return True

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token")


@dataclass
class AuthorizationCode:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user_id: int
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: float = field(default_factory=time.time)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_auth_time(self):
        return self.auth_time


@dataclass
class Token(TokenMixin):
    client_id: str
    user_id: int
    scope: str
    access_token: str
    refresh_token: str | None
    expires_in: int
    issued_at: float = field(default_factory=time.time)
    revoked: bool = False

    def check_client(self, client):
        return client.client_id == self.client_id

    def get_scope(self):
        return self.scope

    def get_expires_in(self):
        return self.expires_in

    def is_expired(self):
        return False

    def is_revoked(self):
        return self.revoked

    def get_user(self):
        return ALICE

    def get_client(self):
        return None


class OAuthTestServer:
    """Start with `.start()`; `.url` is its base; register a client per provider under test."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: list[Token] = []
        self.token_requests: list[dict] = []
        self.authorize_requests: list[dict] = []
        self.consent = "approve"  # or "deny"
        self.token_mode = "ok"  # or "error500", "stall", "redirect"
        self.redirected_requests = 0
        self.stall_seconds = 3.0
        self.app = self._build_app()
        self._server = None
        self._thread = None

    # --- control ---------------------------------------------------------------------------

    def start(self) -> OAuthTestServer:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request is noise
        self._server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def reset(self) -> None:
        with self.lock:
            self.clients.clear()
            self.codes.clear()
            self.tokens.clear()
            self.token_requests.clear()
            self.authorize_requests.clear()
            self.redirected_requests = 0
        self.consent = "approve"
        self.token_mode = "ok"

    def register_client(self, *, redirect_uri: str, public: bool = False) -> Client:
        client = Client(client_id="client-" + secrets.token_hex(6),
                        client_secret="" if public else "canary-secret-" + secrets.token_hex(16),
                        redirect_uris=[redirect_uri])
        with self.lock:
            self.clients[client.client_id] = client
        return client

    def token_request_count(self, grant_type: str | None = None) -> int:
        with self.lock:
            return sum(1 for r in self.token_requests if grant_type is None or r.get("grant_type") == grant_type)

    @property
    def authorize_url(self) -> str:
        return f"{self.url}/authorize"

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    # --- the Flask app -----------------------------------------------------------------------

    def _build_app(self) -> Flask:
        app = Flask(__name__)
        app.config.update(
            OAUTH2_ACCESS_TOKEN_GENERATOR=lambda *a, **k: ACCESS_TOKEN_PREFIX + secrets.token_hex(20),
            OAUTH2_REFRESH_TOKEN_GENERATOR=lambda *a, **k: REFRESH_TOKEN_PREFIX + secrets.token_hex(20),
        )
        server = AuthorizationServer(app, query_client=self.clients.get, save_token=self._save_token)
        server.register_grant(_code_grant(self), [CodeChallenge(required=True)])
        server.register_grant(_refresh_grant(self))

        @app.get("/authorize")
        def authorize():
            with self.lock:
                self.authorize_requests.append(request.args.to_dict())
            try:
                grant = server.get_consent_grant(end_user=ALICE)
            except OAuth2Error as error:
                return jsonify(error=error.error), 400
            user = ALICE if self.consent == "approve" else None
            return server.create_authorization_response(grant_user=user, grant=grant)

        @app.post("/token")
        def token():
            with self.lock:
                self.token_requests.append({**request.form.to_dict(),
                                            "authorization": request.headers.get("Authorization", "")})
            if self.token_mode == "error500":
                return "the database is down", 500
            if self.token_mode == "redirect":
                return "", 307, {"Location": f"{self.url}/elsewhere"}
            if self.token_mode == "stall":
                time.sleep(self.stall_seconds)
            return server.create_token_response()

        @app.route("/elsewhere", methods=["GET", "POST"])
        def elsewhere():
            with self.lock:
                self.redirected_requests += 1
            return jsonify(access_token="should-never-be-fetched", token_type="Bearer")

        return app

    def _save_token(self, token: dict, req) -> None:
        with self.lock:
            self.tokens.append(Token(client_id=req.client.client_id, user_id=ALICE.id, scope=token.get("scope", ""),
                                     access_token=token["access_token"], refresh_token=token.get("refresh_token"),
                                     expires_in=token.get("expires_in", 3600)))


def _code_grant(owner: OAuthTestServer):
    class CodeGrant(grants.AuthorizationCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "none"]

        def save_authorization_code(self, code, req):
            with owner.lock:
                owner.codes[code] = AuthorizationCode(
                    code=code, client_id=req.client.client_id, redirect_uri=req.payload.redirect_uri,
                    scope=req.scope or "", user_id=req.user.id,
                    code_challenge=req.payload.data.get("code_challenge"),
                    code_challenge_method=req.payload.data.get("code_challenge_method"),
                )

        def query_authorization_code(self, code, client):
            with owner.lock:
                item = owner.codes.get(code)
            return item if item and item.client_id == client.client_id else None

        def delete_authorization_code(self, authorization_code):
            with owner.lock:
                owner.codes.pop(authorization_code.code, None)

        def authenticate_user(self, authorization_code):
            return ALICE

    return CodeGrant


def _refresh_grant(owner: OAuthTestServer):
    class RefreshGrant(grants.RefreshTokenGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "none"]
        INCLUDE_NEW_REFRESH_TOKEN = True  # rotate, as many providers do

        def authenticate_refresh_token(self, refresh_token):
            with owner.lock:
                return next((t for t in owner.tokens if t.refresh_token == refresh_token and not t.revoked), None)

        def authenticate_user(self, refresh_token):
            return ALICE

        def revoke_old_credential(self, refresh_token):
            refresh_token.revoked = True

    return RefreshGrant
