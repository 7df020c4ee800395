"""What the fault-injection suite (bench/faults.py) records and how it judges a scenario: the
answers each Idempotency-Key got, which answers are final, and the figures and invariants of
one scenario. No processes here, so tests/faults/ checks it cheaply.
"""

from collections import Counter
from dataclasses import dataclass

# Answers a careful client retries with the same key: no answer, a server error, the key still
# held by a request that has not answered, or the rate limit. Every other answer is final.
RETRYABLE_CODES = {"idempotency_key_in_use", "rate_limit_exceeded"}


@dataclass(frozen=True)
class Answer:
    at: float  # wall-clock seconds when the answer (or the failure) came
    took: float = 0.0  # seconds the client waited for it
    status: int | None = None  # None: no HTTP answer at all
    failure: str = ""  # "timeout" or "connection" when status is None
    payment_id: str = ""
    code: str = ""  # the error envelope's code
    verify: bool = False  # the replay after recovery, not the client's own traffic

    @property
    def kind(self) -> str:
        if self.status is None:
            return self.failure
        return f"{self.status // 100}xx"

    @property
    def final(self) -> bool:
        """What a client may act on: retrying with the same key must give it again."""
        return self.status is not None and self.status < 500 and self.code not in RETRYABLE_CODES

    @property
    def outcome(self) -> tuple:
        return (self.status, self.payment_id or self.code)


def differs(answers: list[Answer]) -> bool:
    """Whether a later final answer for a key differs from its first final answer."""
    outcomes = [answer.outcome for answer in answers if answer.final]
    return any(outcome != outcomes[0] for outcome in outcomes[1:])


def told_payment_ids(answers: list[Answer]) -> set[str]:
    return {a.payment_id for a in answers if a.payment_id and a.status and a.status < 300}


def unacknowledged(answers: list[Answer], payment_ids: list[str]) -> int:
    """Payments made for a key whose final answer does not name them: the merchant was told
    "failed" (or another payment) while the card was charged."""
    finals = [a for a in answers if a.final]
    if not finals:
        return 0  # never answered: counted as "never told", not as a wrong answer
    return sum(1 for pid in payment_ids if pid != finals[0].payment_id)


ANSWER_KINDS = ("2xx", "4xx", "5xx", "timeout", "connection")


def first_after(times, moment: float) -> float | None:
    """Seconds from `moment` to the first of `times` after it (None: none came)."""
    later = [t for t in times if t >= moment]
    return round(min(later) - moment, 2) if later else None


def caught_up(expected: set[str], delivered: dict[str, float], fault_ended: float):
    """Seconds from the end of the fault until the last expected event was delivered (0: all
    were delivered before it ended; None: some are still pending)."""
    if not expected <= delivered.keys():
        return None
    return round(max(0.0, max((delivered[e] for e in expected), default=0) - fault_ended), 2)


def summarise(
    name: str,
    keys: dict[str, list[Answer]],
    payments_by_key: dict[str, list[str]],
    expected_events: set[str],
    delivered: dict[str, float],
    fault_ended: float,
) -> dict:
    """The figures of one scenario. `payments_by_key`: the payments the database holds for each
    key of the scenario (the key is the payment's reference); `delivered`: event id -> when the
    receiver first answered 2xx for it."""
    client_answers = [a for answers in keys.values() for a in answers if not a.verify]
    kinds = Counter(answer.kind for answer in client_answers)
    errors = Counter(
        f"{a.status} {a.code}".strip() for a in client_answers if a.kind in ("4xx", "5xx")
    )
    told = set().union(*(told_payment_ids(answers) for answers in keys.values()))
    found = {pid for pids in payments_by_key.values() for pid in pids}
    answered = {key for key, answers in keys.items() if any(a.final for a in answers)}
    successes = [a.at for a in client_answers if a.status is not None and a.status < 300]
    figures = {
        "scenario": name,
        "keys": len(keys),
        "requests": len(client_answers),
        "answers": {kind: kinds.get(kind, 0) for kind in ANSWER_KINDS},
        "errors": dict(errors.most_common()),
        "keys_without_final_answer": len(keys) - len(answered),
        "payments_told": len(told),
        "payments_found": len(found),
        "payments_lost": len(told - found),
        "payments_never_told": len(found - told),
        "payments_unacknowledged": sum(
            unacknowledged(keys.get(key, []), pids) for key, pids in payments_by_key.items()
        ),
        "keys_charged_twice": sum(1 for pids in payments_by_key.values() if len(pids) > 1),
        "keys_different_answer": sum(1 for answers in keys.values() if differs(answers)),
        "events_expected": len(expected_events),
        "events_delivered": len(expected_events & delivered.keys()),
        "events_pending": len(expected_events - delivered.keys()),
        "slowest_answer_s": round(max((a.took for a in client_answers), default=0.0), 2),
        "recover_payment_s": first_after(successes, fault_ended),
        "recover_webhook_s": first_after(delivered.values(), fault_ended),
        "events_caught_up_s": caught_up(expected_events, delivered, fault_ended),
    }
    figures["broken"] = broken_invariants(figures)
    return figures


def broken_invariants(figures: dict) -> list[str]:
    """What must never happen whatever the fault: a key answered two ways, a payment a client
    was told about missing, a payment its key's final answer does not name, one key charged
    twice."""
    checks = (
        "keys_different_answer",
        "payments_lost",
        "payments_unacknowledged",
        "keys_charged_twice",
    )
    return [f"{check}={figures[check]}" for check in checks if figures[check]]


COLUMNS = [
    ("scenario", "scenario"),
    ("req", "requests"),
    *[(kind[:4], kind) for kind in ANSWER_KINDS],
    ("told", "payments_told"),
    ("found", "payments_found"),
    ("lost", "payments_lost"),
    ("untold", "payments_never_told"),
    ("unack", "payments_unacknowledged"),
    ("twice", "keys_charged_twice"),
    ("diff", "keys_different_answer"),
    ("ev.exp", "events_expected"),
    ("ev.ok", "events_delivered"),
    ("ev.pend", "events_pending"),
    ("slow s", "slowest_answer_s"),
    ("pay s", "recover_payment_s"),
    ("hook s", "recover_webhook_s"),
    ("all ev s", "events_caught_up_s"),
]


def table(rows: list[dict]) -> str:
    def cell(row: dict, field: str):
        value = row["answers"].get(field) if field in ANSWER_KINDS else row[field]
        return "-" if value is None else str(value)

    grid = [[title for title, _ in COLUMNS]]
    grid += [[cell(row, field) for _, field in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(text.ljust(width) if i == 0 else text.rjust(width)
                  for i, (text, width) in enumerate(zip(line, widths, strict=True)))
        for line in grid
    )  # fmt: skip
