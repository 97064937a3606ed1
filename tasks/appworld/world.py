"""Seeded worlds for ``appworld-lite``: one SQLite database per task, built from a seed.

A world has a supervisor (with a password per app), 12-18 notes, 10-16 contacts with
relationships, a wallet and 4-8 payment requests, drawn from small name and word lists with
an explicit `numpy.random.Generator`. `world_bytes(seed)` is the database serialised; the same
seed gives the same bytes.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from tasks.appworld.apps import SCHEMA

FIRST = ("Ava", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jade", "Kofi",
         "Lena", "Milo", "Nora", "Omar", "Pia", "Quin", "Rosa", "Sami", "Tara", "Uma", "Vik")
LAST = ("Adler", "Brooks", "Chen", "Diaz", "Evans", "Fox", "Gray", "Hart", "Ito", "Jones",
        "Khan", "Lopez", "Moss", "Nagy", "Ortiz", "Park")
RELATIONSHIPS = ("family", "friend", "coworker")
TOPICS = ("Groceries", "Workout", "Reading list", "Trip ideas", "Recipes", "Meeting notes",
          "Gift ideas", "Budget", "Garden", "Movies", "Chores", "Passwords hint")
WORDS = ("apple", "river", "basket", "lamp", "orbit", "pepper", "candle", "violin", "maple",
         "harbor", "copper", "meadow", "saddle", "tulip", "ember", "walnut")
TAGS = ("home", "work", "ideas", "urgent", "personal")
NOW = "2024-05-20T10:00:00"


def _phone(rng: np.random.Generator) -> str:
    return "555" + "".join(str(d) for d in rng.integers(0, 10, size=7))


def build_world(seed: int) -> sqlite3.Connection:
    """A fresh in-memory world for `seed`."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7_711]))
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.executescript(SCHEMA)
    first, last = str(rng.choice(FIRST)), str(rng.choice(LAST))
    email = f"{first.lower()}.{last.lower()}@example.com"
    db.execute("INSERT INTO supervisor VALUES (1, ?, ?, ?, ?)", (first, last, email, _phone(rng)))
    for app in ("simple_note", "phone", "venmo"):
        password = "".join(rng.choice(list("abcdefghjkmnpqrstuvwxyz23456789"), size=10))
        db.execute("INSERT INTO account_password (account_name, password) VALUES (?, ?)",
                   (app, password))
    db.execute("INSERT INTO task VALUES (1, '', 'active', NULL)")
    topics = list(rng.permutation(TOPICS))
    for i in range(int(rng.integers(12, 19))):
        words = " ".join(rng.choice(WORDS, size=4))
        tags = sorted({str(t) for t in rng.choice(TAGS, size=int(rng.integers(1, 3)))})
        title = topics[i] if i < len(topics) else f"{topics[i % len(topics)]} {i}"
        db.execute("INSERT INTO note (title, content, tags, created_at) VALUES (?, ?, ?, ?)",
                   (title, words, json.dumps(tags), f"2024-05-{1 + i:02d}T09:00:00"))
    names = set()
    while len(names) < int(rng.integers(10, 17)):
        names.add((str(rng.choice(FIRST)), str(rng.choice(LAST))))
    for f, l in sorted(names, key=lambda n: (n[1], n[0])):
        if f == first and l == last:
            continue
        db.execute("INSERT INTO contact (first_name, last_name, email, phone_number, "
                   "relationship) VALUES (?, ?, ?, ?, ?)",
                   (f, l, f"{f.lower()}.{l.lower()}@example.com", _phone(rng),
                    str(rng.choice(RELATIONSHIPS))))
    db.execute("INSERT INTO wallet VALUES (1, ?)", (float(rng.integers(800, 2000)),))
    contacts = db.execute("SELECT email FROM contact").fetchall()
    for i in range(int(rng.integers(4, 9))):
        requester = contacts[int(rng.integers(len(contacts)))][0]
        db.execute("INSERT INTO payment_request (requester_email, amount, description, status, "
                   "created_at) VALUES (?, ?, ?, 'pending', ?)",
                   (requester, float(rng.integers(5, 120)), str(rng.choice(WORDS)),
                    f"2024-05-{10 + i:02d}T12:00:00"))
    db.commit()
    return db


def world_bytes(seed: int) -> bytes:
    """The serialised world database (the episode's start state)."""
    return build_world(seed).serialize()


def table_rows(db: sqlite3.Connection) -> dict[str, dict[int, tuple]]:
    """Every table's rows by primary key: ``{table: {id: row tuple}}``."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {row[0]: tuple(row) for row in db.execute(f"SELECT * FROM {t}")} for t in tables}
