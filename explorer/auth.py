"""Who is using the explorer and what they may do: viewers query, compare, mark and export; editors also build
indexes, fine-tune and run checks.

How a user is known, in this order (docs/SECURITY.md, "Users and roles"):
1. OpenID Connect through Streamlit's `st.login`, when `.streamlit/secrets.toml` has an `[auth]` section. Everyone
   the provider logs in may view; editors are the e-mail addresses in `[rise] editors = [...]` (or `RISE_EDITORS`,
   comma-separated; `*` for everyone).
2. Access tokens, when `.streamlit/secrets.toml` has `[rise.users.NAME]` tables with `token` and `role`: the person
   types their token once per session; the table's name is who they are.
3. Neither configured: served on this machine only (server.address a loopback address), the one local user is an
   editor. Served beyond it, the app refuses every page until one of the above is configured, unless
   `RISE_ANONYMOUS_ROLE=viewer` (or `editor`) says what anyone who reaches the port may do.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from rise_core.errors import RiseError

VIEWER, EDITOR = "viewer", "editor"
ROLES = (VIEWER, EDITOR)
LOCAL_USER = "local"
FAILED_LOGIN_DELAY_S = 1.0  # each wrong token costs its session this long: guessing stays slow


class AccessDeniedError(RiseError):
    """The user's role does not allow this action, or nobody is logged in."""


@dataclass(frozen=True)
class User:
    """Who runs this session: `name` (an e-mail, a token's table name, or 'local') and `role`."""

    name: str
    role: str
    via: str  # "oidc", "token", "local", "anonymous"

    @property
    def can_edit(self) -> bool:
        return self.role == EDITOR


@dataclass(frozen=True)
class AccessSettings:
    """How users are known (see the module doc), read from the secrets, the environment and the server address."""

    mode: str  # "oidc", "token", "local", "anonymous", "closed"
    editors: frozenset[str] = frozenset()
    tokens: tuple[tuple[str, str, str], ...] = ()  # (name, role, token)
    anonymous_role: str = ""

    @classmethod
    def resolve(cls, secrets: Mapping[str, Any], env: Mapping[str, str], address: str | None) -> AccessSettings:
        rise = dict(secrets.get("rise", {}) or {})
        editors = {e.strip().lower() for e in env.get("RISE_EDITORS", "").split(",") if e.strip()}
        editors |= {str(e).strip().lower() for e in rise.get("editors", []) or []}
        anonymous = env.get("RISE_ANONYMOUS_ROLE", "").strip().lower()
        if anonymous and anonymous not in ROLES:
            raise AccessDeniedError(f"RISE_ANONYMOUS_ROLE must be one of {', '.join(ROLES)}, got {anonymous!r}")
        if "auth" in secrets:
            return cls("oidc", frozenset(editors))
        users = dict(rise.get("users", {}) or {})
        if users:
            tokens = []
            for name, entry in users.items():
                entry = dict(entry or {})
                token, role = str(entry.get("token", "")), str(entry.get("role", VIEWER)).lower()
                if len(token) < 16:
                    raise AccessDeniedError(f"secrets: rise.users.{name}.token must be at least 16 characters")
                if role not in ROLES:
                    raise AccessDeniedError(f"secrets: rise.users.{name}.role must be one of {', '.join(ROLES)}")
                tokens.append((str(name), role, token))
            return cls("token", frozenset(editors), tuple(tokens))
        if is_loopback(address):
            return cls("local")
        if anonymous:
            return cls("anonymous", anonymous_role=anonymous)
        return cls("closed")

    def token_user(self, typed: str) -> User | None:
        """The user whose token was typed (compared in constant time), else None."""
        found = None
        for name, role, token in self.tokens:
            if hmac.compare_digest(typed.encode(), token.encode()):
                found = User(name, role, "token")
        return found

    def oidc_user(self, email: str) -> User:
        email = email.strip().lower()
        role = EDITOR if ("*" in self.editors or email in self.editors) else VIEWER
        return User(email, role, "oidc")


def is_loopback(address: str | None) -> bool:
    """True for an address that only this machine reaches (127.0.0.0/8, ::1, localhost)."""
    if not address:
        return False  # Streamlit's own default listens on every interface
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _served_address() -> str | None:
    return st.get_option("server.address")


def _secrets() -> Mapping[str, Any]:
    try:
        return st.secrets.to_dict()
    except (FileNotFoundError, OSError, ValueError):  # no secrets file: nothing configured
        return {}
    except Exception as exc:  # noqa: BLE001 - a malformed secrets file must not open the app to everyone
        raise AccessDeniedError(f"the secrets file could not be read ({type(exc).__name__}); fix it") from exc


def settings() -> AccessSettings:
    return AccessSettings.resolve(_secrets(), os.environ, _served_address())


def _oidc_identity() -> str | None:
    """The logged-in e-mail from `st.user` (None when nobody is logged in)."""
    user = st.user
    if not getattr(user, "is_logged_in", False):
        return None
    return str(user.get("email") or user.get("sub") or "")


def current_user() -> User:
    """The session's user; shows the login (and stops the page) when nobody is logged in yet."""
    access = settings()
    if access.mode == "local":
        return User(LOCAL_USER, EDITOR, "local")
    if access.mode == "anonymous":
        return User("anonymous", access.anonymous_role, "anonymous")
    if access.mode == "closed":
        st.error("This explorer is served beyond this machine without a login. Configure OpenID Connect (an [auth] "
                 "section in .streamlit/secrets.toml) or access tokens ([rise.users.NAME] with token and role), or set "
                 "RISE_ANONYMOUS_ROLE=viewer to let anyone who reaches it view (docs/SECURITY.md).",
                 icon=":material/lock:")
        st.stop()
    if access.mode == "oidc":
        email = _oidc_identity()
        if not email:
            st.info("Log in to use the explorer.", icon=":material/lock:")
            st.button("Log in", on_click=st.login, type="primary", key="auth_login")
            st.stop()
        return access.oidc_user(email)
    known = st.session_state.get("_auth_user")
    if isinstance(known, User):
        return known
    typed = st.text_input("Access token", type="password", key="_auth_token",
                          help="Given to you by whoever runs this server.")
    if typed:
        user = access.token_user(typed)
        if user is None:
            time.sleep(FAILED_LOGIN_DELAY_S)
            st.error("That token is not known here.", icon=":material/lock:")
        else:
            st.session_state["_auth_user"] = user
            st.rerun()
    st.stop()
    raise AssertionError("unreachable")  # st.stop raises


def require_editor(user: User, action: str) -> None:
    """AccessDeniedError unless `user` may change things on the server (build, fine-tune, check)."""
    if not user.can_edit:
        raise AccessDeniedError(f"{user.name} is a viewer here and may not {action}; ask whoever runs the server to "
                                "make you an editor")
