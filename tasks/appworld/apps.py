"""The apps of ``appworld-lite``: SQLite-backed, called as ``apis.<app>.<api>(**kwargs)``.

Modelled on AppWorld's apps (``supervisor``, ``api_docs``, ``simple_note``, ``phone``,
``venmo``) but written by this project, far smaller: four tables of state, login with an access
token, paginated listings (``page_index``, ``page_limit``), errors as one message. The world's
database lives on the host; the agent reaches these functions only through the API server
(`tasks.appworld.server`).

Access tokens are issued by an app's ``login`` and bound to the episode: each `Apps` draws one
random 128-bit token per app from the generator it is given (the env derives it from the
episode's seed and world, so a replay sees the same tokens and any other episode other ones).
A call with any other token (a made-up one, another app's, another episode's) is refused with
upstream AppWorld's 401 message, `INVALID_TOKEN`.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Callable
from typing import Any

import numpy as np

SCHEMA = """
CREATE TABLE supervisor (id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, email TEXT,
                         phone_number TEXT);
CREATE TABLE account_password (id INTEGER PRIMARY KEY, account_name TEXT, password TEXT);
CREATE TABLE task (id INTEGER PRIMARY KEY, instruction TEXT, status TEXT, answer TEXT);
CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, content TEXT, tags TEXT,
                   created_at TEXT);
CREATE TABLE contact (id INTEGER PRIMARY KEY, first_name TEXT, last_name TEXT, email TEXT,
                      phone_number TEXT, relationship TEXT);
CREATE TABLE message (id INTEGER PRIMARY KEY, phone_number TEXT, direction TEXT, text TEXT,
                      sent_at TEXT);
CREATE TABLE wallet (id INTEGER PRIMARY KEY, balance REAL);
CREATE TABLE payment (id INTEGER PRIMARY KEY, sender_email TEXT, receiver_email TEXT,
                      amount REAL, description TEXT, created_at TEXT);
CREATE TABLE payment_request (id INTEGER PRIMARY KEY, requester_email TEXT, amount REAL,
                              description TEXT, status TEXT, created_at TEXT);
"""

APP_DESCRIPTIONS = {
    "api_docs": "Search and read the documentation of every app's APIs.",
    "supervisor": "Your supervisor's profile, account passwords, and the task to complete.",
    "simple_note": "A note-taking app: create, search, update and delete notes.",
    "phone": "Contacts (with relationships) and text messages.",
    "venmo": "A payment app: balance, payments sent and received, payment requests.",
}
PAGE_LIMIT_MAX = 20
LOGIN_APPS = ("simple_note", "phone", "venmo")
INVALID_TOKEN = ("You are either not authorized to access this {app} API endpoint or your "
                 "access token is missing, invalid or expired.")
"""Upstream AppWorld's message for a call without a valid token (its HTTP 401 body)."""


class ApiError(Exception):
    """An API call the app refuses (the agent sees the message)."""


def _page(rows: list[dict], page_index: int, page_limit: int) -> list[dict]:
    if page_limit < 1 or page_limit > PAGE_LIMIT_MAX or page_index < 0:
        raise ApiError(f"page_limit must be 1..{PAGE_LIMIT_MAX}, page_index >= 0")
    return rows[page_index * page_limit:(page_index + 1) * page_limit]


class Apps:
    """Every API of the world in one object; `call(app, api, kwargs)` dispatches. `rng`
    draws this episode's access tokens (one per app in `LOGIN_APPS`)."""

    def __init__(self, db: sqlite3.Connection, now: str, rng: np.random.Generator):
        self.db, self.now = db, now
        self._tokens = {app: rng.bytes(16).hex() for app in LOGIN_APPS}
        db.row_factory = sqlite3.Row
        self._routes: dict[tuple[str, str], Callable[..., Any]] = {
            (name.split("__")[0], name.split("__")[1]): getattr(self, name)
            for name in dir(self) if "__" in name and not name.startswith("_")}

    # ---- plumbing ----------------------------------------------------------------------------
    def call(self, app: str, api: str, kwargs: dict[str, Any]) -> Any:
        route = self._routes.get((app, api))
        if route is None:
            raise ApiError(f"No API named {api!r} in app {app!r}.")
        try:
            result = route(**kwargs)
        except TypeError as exc:
            raise ApiError(f"Bad arguments for {app}.{api}: {exc}") from None
        self.db.commit()
        return result

    def _rows(self, sql: str, *args: Any) -> list[dict]:
        return [dict(r) for r in self.db.execute(sql, args).fetchall()]

    def _login(self, app: str, username: str, password: str) -> dict:
        email = self._rows("SELECT email FROM supervisor")[0]["email"]
        stored = self._rows("SELECT password FROM account_password WHERE account_name=?", app)
        if username != email or not stored or stored[0]["password"] != password:
            raise ApiError("Invalid credentials.")
        return {"access_token": self._tokens[app], "token_type": "Bearer"}

    def _auth(self, app: str, access_token: Any) -> None:
        if not (isinstance(access_token, str) and hmac.compare_digest(
                access_token.encode(), self._tokens[app].encode())):
            raise ApiError(INVALID_TOKEN.format(app=app))

    # ---- api_docs ----------------------------------------------------------------------------
    def api_docs__show_app_descriptions(self) -> list[dict]:
        """Every app's name and what it does."""
        return [{"name": k, "description": v} for k, v in APP_DESCRIPTIONS.items()]

    def api_docs__show_api_descriptions(self, app_name: str) -> list[dict]:
        """The APIs of one app, each with a one-line description."""
        return [{"name": api, "description": (fn.__doc__ or "").strip().splitlines()[0]}
                for (app, api), fn in sorted(self._routes.items()) if app == app_name]

    def api_docs__show_api_doc(self, app_name: str, api_name: str) -> dict:
        """One API's full description and parameters."""
        fn = self._routes.get((app_name, api_name))
        if fn is None:
            raise ApiError(f"No API named {api_name!r} in app {app_name!r}.")
        code = fn.__code__
        params = list(code.co_varnames[1:code.co_argcount])
        defaults = dict(zip(reversed(params), reversed(fn.__defaults__ or ())))
        return {"app_name": app_name, "api_name": api_name, "description": fn.__doc__.strip(),
                "parameters": [{"name": p, "required": p not in defaults,
                                "default": defaults.get(p)} for p in params]}

    # ---- supervisor --------------------------------------------------------------------------
    def supervisor__show_profile(self) -> dict:
        """Your supervisor's name, email and phone number."""
        return self._rows("SELECT first_name, last_name, email, phone_number FROM supervisor")[0]

    def supervisor__show_account_passwords(self) -> list[dict]:
        """The supervisor's passwords for every app account."""
        return self._rows("SELECT account_name, password FROM account_password ORDER BY id")

    def supervisor__complete_task(self, answer: Any = None, status: str = "success") -> dict:
        """Mark the task complete; give `answer` when the task asks a question."""
        self.db.execute("UPDATE task SET status=?, answer=?", (status, json.dumps(answer)))
        return {"message": "Task marked complete."}

    # ---- simple_note -------------------------------------------------------------------------
    def simple_note__login(self, username: str, password: str) -> dict:
        """Log in with the supervisor's email and password; returns an access_token."""
        return self._login("simple_note", username, password)

    def simple_note__search_notes(self, access_token: str, query: str = "", tag: str = "",
                                  page_index: int = 0, page_limit: int = 5) -> list[dict]:
        """Notes whose title or content contains `query` (and with `tag`), paginated."""
        self._auth("simple_note", access_token)
        rows = [dict(r, tags=json.loads(r["tags"])) for r in self._rows(
            "SELECT id, title, content, tags FROM note ORDER BY id")]
        rows = [r for r in rows if query.lower() in (r["title"] + " " + r["content"]).lower()
                and (not tag or tag in r["tags"])]
        return _page(rows, page_index, page_limit)

    def simple_note__create_note(self, access_token: str, title: str, content: str = "",
                                 tags: list | None = None) -> dict:
        """Create a note; returns its note_id."""
        self._auth("simple_note", access_token)
        if not title:
            raise ApiError("title must not be empty.")
        cur = self.db.execute("INSERT INTO note (title, content, tags, created_at) VALUES "
                              "(?, ?, ?, ?)", (title, content, json.dumps(tags or []), self.now))
        return {"message": "Note created.", "note_id": cur.lastrowid}

    def simple_note__update_note(self, access_token: str, note_id: int, title: str | None = None,
                                 content: str | None = None, tags: list | None = None) -> dict:
        """Change a note's title, content and/or tags (the whole tag list)."""
        self._auth("simple_note", access_token)
        row = self._rows("SELECT * FROM note WHERE id=?", note_id)
        if not row:
            raise ApiError(f"No note with id {note_id}.")
        new = {"title": title if title is not None else row[0]["title"],
               "content": content if content is not None else row[0]["content"],
               "tags": json.dumps(tags) if tags is not None else row[0]["tags"]}
        self.db.execute("UPDATE note SET title=?, content=?, tags=? WHERE id=?",
                        (new["title"], new["content"], new["tags"], note_id))
        return {"message": "Note updated."}

    def simple_note__delete_note(self, access_token: str, note_id: int) -> dict:
        """Delete a note."""
        self._auth("simple_note", access_token)
        if self.db.execute("DELETE FROM note WHERE id=?", (note_id,)).rowcount == 0:
            raise ApiError(f"No note with id {note_id}.")
        return {"message": "Note deleted."}

    # ---- phone -------------------------------------------------------------------------------
    def phone__login(self, username: str, password: str) -> dict:
        """Log in with the supervisor's email and password; returns an access_token."""
        return self._login("phone", username, password)

    def phone__search_contacts(self, access_token: str, query: str = "", relationship: str = "",
                               page_index: int = 0, page_limit: int = 5) -> list[dict]:
        """Contacts whose name contains `query` (and of `relationship`), paginated."""
        self._auth("phone", access_token)
        rows = self._rows("SELECT id, first_name, last_name, email, phone_number, relationship "
                          "FROM contact ORDER BY id")
        rows = [r for r in rows if query.lower() in f"{r['first_name']} {r['last_name']}".lower()
                and (not relationship or r["relationship"] == relationship)]
        return _page(rows, page_index, page_limit)

    def phone__send_text_message(self, access_token: str, phone_number: str, message: str) -> dict:
        """Send a text message to a phone number."""
        self._auth("phone", access_token)
        if not message:
            raise ApiError("message must not be empty.")
        cur = self.db.execute("INSERT INTO message (phone_number, direction, text, sent_at) "
                              "VALUES (?, 'sent', ?, ?)", (phone_number, message, self.now))
        return {"message": "Text message sent.", "text_message_id": cur.lastrowid}

    # ---- venmo -------------------------------------------------------------------------------
    def venmo__login(self, username: str, password: str) -> dict:
        """Log in with the supervisor's email and password; returns an access_token."""
        return self._login("venmo", username, password)

    def venmo__show_balance(self, access_token: str) -> dict:
        """Your wallet balance."""
        self._auth("venmo", access_token)
        return {"balance": self._rows("SELECT balance FROM wallet")[0]["balance"]}

    def venmo__show_payment_requests(self, access_token: str, status: str = "pending",
                                     page_index: int = 0, page_limit: int = 5) -> list[dict]:
        """Payment requests others sent you, by status (pending/approved/denied), paginated."""
        self._auth("venmo", access_token)
        rows = self._rows("SELECT id, requester_email, amount, description, status FROM "
                          "payment_request WHERE status=? ORDER BY id", status)
        return _page(rows, page_index, page_limit)

    def venmo__approve_payment_request(self, access_token: str, payment_request_id: int) -> dict:
        """Pay a pending payment request from your balance."""
        self._auth("venmo", access_token)
        row = self._rows("SELECT * FROM payment_request WHERE id=? AND status='pending'",
                         payment_request_id)
        if not row:
            raise ApiError(f"No pending payment request with id {payment_request_id}.")
        self._pay(row[0]["requester_email"], row[0]["amount"], row[0]["description"])
        self.db.execute("UPDATE payment_request SET status='approved' WHERE id=?",
                        (payment_request_id,))
        return {"message": "Payment request approved."}

    def venmo__deny_payment_request(self, access_token: str, payment_request_id: int) -> dict:
        """Deny a pending payment request."""
        self._auth("venmo", access_token)
        cur = self.db.execute("UPDATE payment_request SET status='denied' WHERE id=? AND "
                              "status='pending'", (payment_request_id,))
        if cur.rowcount == 0:
            raise ApiError(f"No pending payment request with id {payment_request_id}.")
        return {"message": "Payment request denied."}

    def venmo__send_money(self, access_token: str, receiver_email: str, amount: float,
                          description: str = "") -> dict:
        """Send `amount` dollars to `receiver_email` from your balance."""
        self._auth("venmo", access_token)
        payment_id = self._pay(receiver_email, amount, description)
        return {"message": "Sent money.", "payment_id": payment_id}

    def _pay(self, receiver: str, amount: float, description: str) -> int:
        amount = round(float(amount), 2)
        balance = self._rows("SELECT balance FROM wallet")[0]["balance"]
        if amount <= 0 or amount > balance:
            raise ApiError(f"Amount must be positive and at most the balance ({balance}).")
        me = self._rows("SELECT email FROM supervisor")[0]["email"]
        self.db.execute("UPDATE wallet SET balance=?", (round(balance - amount, 2),))
        cur = self.db.execute("INSERT INTO payment (sender_email, receiver_email, amount, "
                              "description, created_at) VALUES (?, ?, ?, ?, ?)",
                              (me, receiver, amount, description, self.now))
        return int(cur.lastrowid)
