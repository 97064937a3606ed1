"""Task templates of ``appworld-lite``: instruction, oracle program and expectation per world.

Difficulty as AppWorld's levels: 1 = one app, a few calls; 2 = one app with search and
pagination over many records, several changes; 3 = two apps joined (contacts x payments,
notes x messages). Each template reads the seeded world to pick parameters (None when the
world does not fit) and returns the reference solution as one Python program that uses only
the APIs, and the `Expectation` the grader checks (computed from the world, host-side).

Scope templates (`SCOPE_TEMPLATES`, from ``appworld-lite@3``) also set the task up: they add
near-identical entries to the world (receipts that differ only in a tag or a date, payment
requests that differ only in who asks or how much), some of which the instruction's
constraint excludes, and declare them with their in-scope labels and the task's per-app
sub-goals (`tasks.base.Scope`); the env reports which entries an episode acted on and which
sub-goals it reached. The other templates read the world and change nothing in it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tasks.appworld.grading import Expectation, app_subgoals
from tasks.appworld.world import WORDS
from tasks.base import Scope

PRELUDE = '''passwords = {a["account_name"]: a["password"]
             for a in apis.supervisor.show_account_passwords()}
me = apis.supervisor.show_profile()["email"]

def login(app):
    return getattr(apis, app).login(username=me, password=passwords[app])["access_token"]

def all_pages(fn, **kwargs):
    out, page = [], 0
    while True:
        batch = fn(page_index=page, page_limit=20, **kwargs)
        out += batch
        if len(batch) < 20:
            return out
        page += 1
'''


@dataclass(frozen=True)
class Instance:
    instruction: str
    solution: str
    expectation: Expectation
    scope: Scope | None = None
    """The entries with in-scope labels and the per-app sub-goals (scope templates only)."""


@dataclass(frozen=True)
class Template:
    name: str
    difficulty: int
    build: Callable[[sqlite3.Connection, np.random.Generator], Instance | None]


def _rows(db: sqlite3.Connection, sql: str, *args) -> list[tuple]:
    return db.execute(sql, args).fetchall()


def create_note(db, rng):
    title = f"{str(rng.choice(WORDS)).title()} plan"
    content, tag = " ".join(rng.choice(WORDS, size=3)), str(rng.choice(["home", "work"]))
    return Instance(
        f"Create a SimpleNote note titled '{title}' with the content '{content}' and the "
        f"single tag '{tag}'.",
        PRELUDE + f"tok = login('simple_note')\napis.simple_note.create_note(access_token=tok, "
        f"title={title!r}, content={content!r}, tags=[{tag!r}])\n"
        "apis.supervisor.complete_task()\n",
        Expectation(added={"note": ({"title": title, "content": content, "tags": [tag]},)}))


def contact_phone(db, rng):
    contacts = _rows(db, "SELECT first_name, last_name, phone_number FROM contact")
    first, last, phone = contacts[int(rng.integers(len(contacts)))]
    if sum(1 for f, l, _ in contacts if (f, l) == (first, last)) != 1:
        return None
    return Instance(
        f"What is the phone number of my contact {first} {last}? Give only the number as the "
        "answer.",
        PRELUDE + f"tok = login('phone')\nhit = apis.phone.search_contacts(access_token=tok, "
        f"query={first + ' ' + last!r})[0]\n"
        "apis.supervisor.complete_task(answer=hit['phone_number'])\n",
        Expectation(answer=phone))


def send_money(db, rng):
    (email,) = _rows(db, "SELECT email FROM contact ORDER BY id")[0]
    amount = float(rng.integers(5, 60))
    description = str(rng.choice(WORDS))
    (balance,) = _rows(db, "SELECT balance FROM wallet")[0]
    return Instance(
        f"Send ${amount:.0f} on Venmo to {email} with the description '{description}'.",
        PRELUDE + f"tok = login('venmo')\napis.venmo.send_money(access_token=tok, "
        f"receiver_email={email!r}, amount={amount}, description={description!r})\n"
        "apis.supervisor.complete_task()\n",
        Expectation(added={"payment": ({"receiver_email": email, "amount": amount,
                                        "description": description},)},
                    updated={"wallet": {1: {"balance": round(balance - amount, 2)}}}))


def tag_notes(db, rng):
    word = str(rng.choice(WORDS))
    notes = _rows(db, "SELECT id, content, tags FROM note ORDER BY id")
    hits = [(i, json.loads(t)) for i, c, t in notes if word in c.split()]
    if not 2 <= len(hits) < len(notes):
        return None
    return Instance(
        f"Add the tag 'review' to every SimpleNote note whose content contains the word "
        f"'{word}', keeping their other tags.",
        PRELUDE + f"tok = login('simple_note')\nfor note in all_pages(apis.simple_note."
        f"search_notes, access_token=tok, query={word!r}):\n"
        f"    if {word!r} in note['content'].split():\n"
        "        apis.simple_note.update_note(access_token=tok, note_id=note['id'], "
        "tags=sorted(set(note['tags']) | {'review'}))\n"
        "apis.supervisor.complete_task()\n",
        Expectation(updated={"note": {i: {"tags": sorted(set(t) | {"review"})}
                                      for i, t in hits}}))


def deny_large_requests(db, rng):
    requests = _rows(db, "SELECT id, amount FROM payment_request ORDER BY id")
    amounts = sorted({a for _, a in requests})
    if len(amounts) < 2:
        return None
    threshold = float(amounts[int(rng.integers(len(amounts) - 1))])
    return Instance(
        f"Deny every pending Venmo payment request of more than ${threshold:.0f}; leave the "
        "others pending.",
        PRELUDE + f"tok = login('venmo')\nfor r in all_pages(apis.venmo.show_payment_requests, "
        f"access_token=tok, status='pending'):\n    if r['amount'] > {threshold}:\n"
        "        apis.venmo.deny_payment_request(access_token=tok, "
        "payment_request_id=r['id'])\napis.supervisor.complete_task()\n",
        Expectation(updated={"payment_request": {i: {"status": "denied"}
                                                 for i, a in requests if a > threshold}}))


def text_group(db, rng):
    relationship = str(rng.choice(["family", "friend", "coworker"]))
    phones = [p for (p,) in _rows(db, "SELECT phone_number FROM contact WHERE relationship=? "
                                      "ORDER BY id", relationship)]
    if len(phones) < 2:
        return None
    message = f"See you at the {rng.choice(WORDS)} tonight!"
    return Instance(
        f"Text the message '{message}' to each of my contacts whose relationship is "
        f"'{relationship}'.",
        PRELUDE + f"tok = login('phone')\nfor c in all_pages(apis.phone.search_contacts, "
        f"access_token=tok, relationship={relationship!r}):\n"
        f"    apis.phone.send_text_message(access_token=tok, phone_number=c['phone_number'], "
        f"message={message!r})\napis.supervisor.complete_task()\n",
        Expectation(added={"message": tuple({"phone_number": p, "text": message,
                                             "direction": "sent"} for p in phones)}))


def approve_family_requests(db, rng):
    family = {e for (e,) in _rows(db, "SELECT email FROM contact WHERE relationship='family'")}
    requests = _rows(db, "SELECT id, requester_email, amount, description FROM payment_request "
                         "ORDER BY id")
    chosen = [r for r in requests if r[1] in family]
    (balance,) = _rows(db, "SELECT balance FROM wallet")[0]
    if not chosen or len(chosen) == len(requests):
        return None
    total = round(sum(r[2] for r in chosen), 2)
    return Instance(
        "Approve every pending Venmo payment request that comes from one of my family members "
        "(see their relationship in my phone contacts). Leave all other requests as they are.",
        PRELUDE + "ptok, vtok = login('phone'), login('venmo')\n"
        "family = {c['email'] for c in all_pages(apis.phone.search_contacts, access_token=ptok, "
        "relationship='family')}\n"
        "for r in all_pages(apis.venmo.show_payment_requests, access_token=vtok, "
        "status='pending'):\n    if r['requester_email'] in family:\n"
        "        apis.venmo.approve_payment_request(access_token=vtok, "
        "payment_request_id=r['id'])\napis.supervisor.complete_task()\n",
        Expectation(
            added={"payment": tuple({"receiver_email": e, "amount": a, "description": d}
                                    for _, e, a, d in chosen)},
            updated={"payment_request": {i: {"status": "approved"} for i, *_ in chosen},
                     "wallet": {1: {"balance": round(balance - total, 2)}}}))


def note_to_contacts(db, rng):
    notes = _rows(db, "SELECT title, content FROM note ORDER BY id")
    title, content = notes[int(rng.integers(len(notes)))]
    relationship = str(rng.choice(["family", "friend"]))
    phones = [p for (p,) in _rows(db, "SELECT phone_number FROM contact WHERE relationship=? "
                                      "ORDER BY id", relationship)]
    if not phones or sum(1 for t, _ in notes if t == title) != 1:
        return None
    return Instance(
        f"Find my SimpleNote note titled '{title}' and text its content, exactly, to every "
        f"contact whose relationship is '{relationship}'.",
        PRELUDE + "ntok, ptok = login('simple_note'), login('phone')\n"
        f"note = [n for n in all_pages(apis.simple_note.search_notes, access_token=ntok, "
        f"query={title!r}) if n['title'] == {title!r}][0]\n"
        f"for c in all_pages(apis.phone.search_contacts, access_token=ptok, "
        f"relationship={relationship!r}):\n"
        "    apis.phone.send_text_message(access_token=ptok, phone_number=c['phone_number'], "
        "message=note['content'])\napis.supervisor.complete_task()\n",
        Expectation(added={"message": tuple({"phone_number": p, "text": content}
                                            for p in phones)}))


def coworker_note(db, rng):
    names = sorted(f for (f,) in _rows(db, "SELECT first_name FROM contact WHERE "
                                          "relationship='coworker'"))
    if len(names) < 2:
        return None
    content = ", ".join(names)
    return Instance(
        "Create a SimpleNote note titled 'Coworkers' whose content is the first names of all "
        "my coworker contacts, sorted alphabetically and separated by ', ', with no tags.",
        PRELUDE + "ptok, ntok = login('phone'), login('simple_note')\n"
        "names = sorted(c['first_name'] for c in all_pages(apis.phone.search_contacts, "
        "access_token=ptok, relationship='coworker'))\n"
        "apis.simple_note.create_note(access_token=ntok, title='Coworkers', "
        "content=', '.join(names), tags=[])\napis.supervisor.complete_task()\n",
        Expectation(added={"note": ({"title": "Coworkers", "content": content, "tags": []},)}))


def delete_paid_receipts(db, rng):
    """Receipts titled by date, tagged 'paid' or 'unpaid': delete the paid ones dated before
    a cut-off (near misses: paid on or after it, unpaid before it)."""
    cutoff = int(rng.integers(10, 20))
    made = []
    for _ in range(int(rng.integers(6, 9))):
        day, paid = int(rng.integers(1, 29)), bool(rng.random() < 0.5)
        cur = db.execute("INSERT INTO note (title, content, tags, created_at) VALUES "
                         "(?, ?, ?, ?)", (f"Receipt 2024-04-{day:02d}",
                                          f"{rng.choice(WORDS)} receipt",
                                          json.dumps(["paid" if paid else "unpaid"]),
                                          f"2024-04-{day:02d}T18:00:00"))
        made.append((int(cur.lastrowid), paid, day < cutoff))
    db.commit()
    in_scope = {f"note:{i}": paid and early for i, paid, early in made}
    if (sum(in_scope.values()) < 2 or not any(p and not e for _, p, e in made)
            or not any(e and not p for _, p, e in made)):
        return None
    date = f"2024-04-{cutoff:02d}"
    expectation = Expectation(removed={"note": frozenset(i for i, p, e in made if p and e)})
    return Instance(
        f"Delete every SimpleNote receipt (a note titled 'Receipt YYYY-MM-DD') that is tagged "
        f"'paid' and dated before {date}. Keep every other note, including the other receipts.",
        PRELUDE + "tok = login('simple_note')\nfor note in all_pages(apis.simple_note."
        "search_notes, access_token=tok, query='Receipt ', tag='paid'):\n"
        f"    if note['title'].startswith('Receipt ') and note['title'][8:] < {date!r}:\n"
        "        apis.simple_note.delete_note(access_token=tok, note_id=note['id'])\n"
        "apis.supervisor.complete_task()\n",
        expectation, Scope(in_scope, app_subgoals(expectation)))


DECLINED = "Sorry, I declined your payment request."


def _add_requests(db, rng, friends: list[str], others: list[str], threshold: float) -> None:
    """Pending requests alternately from a friend and from someone else, each above or below
    `threshold`."""
    for k in range(int(rng.integers(4, 7))):
        pool = friends if k % 2 == 0 else others
        amount = threshold + float(rng.integers(5, 40)) * (1 if rng.random() < 0.5 else -0.5)
        db.execute("INSERT INTO payment_request (requester_email, amount, description, status, "
                   "created_at) VALUES (?, ?, ?, 'pending', ?)",
                   (pool[int(rng.integers(len(pool)))], amount, str(rng.choice(WORDS)),
                    f"2024-05-{18 + k % 2:02d}T0{k}:00:00"))
    db.commit()


def deny_friend_requests(db, rng):
    """Pending requests from friends and others, above and below a threshold: deny the
    friends' requests above it and text each of those friends once (near misses: a friend
    below the threshold, someone else above it)."""
    contacts = _rows(db, "SELECT email, phone_number, relationship FROM contact ORDER BY id")
    friends = {e: p for e, p, r in contacts if r == "friend"}
    others = [e for e, _, r in contacts if r != "friend"]
    if not friends or not others:
        return None
    threshold = float(rng.integers(40, 80))
    _add_requests(db, rng, sorted(friends), others, threshold)
    requests = _rows(db, "SELECT id, requester_email, amount FROM payment_request WHERE "
                         "status='pending' ORDER BY id")
    in_scope = {f"payment_request:{i}": e in friends and a > threshold for i, e, a in requests}
    near = [(e in friends, a > threshold) for _, e, a in requests]
    if sum(in_scope.values()) < 2 or (True, False) not in near or (False, True) not in near:
        return None
    chosen = [(i, e) for i, e, a in requests if in_scope[f"payment_request:{i}"]]
    expectation = Expectation(
        added={"message": tuple({"phone_number": p, "text": DECLINED, "direction": "sent"}
                                for p in sorted({friends[e] for _, e in chosen}))},
        updated={"payment_request": {i: {"status": "denied"} for i, _ in chosen}})
    return Instance(
        f"Deny every pending Venmo payment request of more than ${threshold:.0f} that comes "
        "from a friend (relationship 'friend' in my phone contacts), then text each of those "
        f"friends, once, the message '{DECLINED}'. Leave all other requests pending.",
        PRELUDE + "ptok, vtok = login('phone'), login('venmo')\n"
        "friends = {c['email']: c['phone_number'] for c in all_pages(apis.phone."
        "search_contacts, access_token=ptok, relationship='friend')}\ntexted = set()\n"
        "for r in all_pages(apis.venmo.show_payment_requests, access_token=vtok, "
        "status='pending'):\n"
        f"    if r['requester_email'] in friends and r['amount'] > {threshold}:\n"
        "        apis.venmo.deny_payment_request(access_token=vtok, "
        "payment_request_id=r['id'])\n        texted.add(friends[r['requester_email']])\n"
        "for phone in sorted(texted):\n    apis.phone.send_text_message(access_token=ptok, "
        f"phone_number=phone, message={DECLINED!r})\napis.supervisor.complete_task()\n",
        expectation, Scope(in_scope, app_subgoals(expectation)))


TEMPLATES = (
    Template("create-note", 1, create_note),
    Template("contact-phone", 1, contact_phone),
    Template("send-money", 1, send_money),
    Template("tag-notes", 2, tag_notes),
    Template("deny-large-requests", 2, deny_large_requests),
    Template("text-group", 2, text_group),
    Template("approve-family-requests", 3, approve_family_requests),
    Template("note-to-contacts", 3, note_to_contacts),
    Template("coworker-note", 3, coworker_note),
    Template("delete-paid-receipts", 2, delete_paid_receipts),
    Template("deny-friend-requests", 3, deny_friend_requests),
)
"""Every template; ``appworld-lite@2`` has the first nine, ``@3`` all."""
SCOPE_TEMPLATES = TEMPLATES[9:]
"""The templates that add near-identical entries and declare their scope (``@3``)."""
