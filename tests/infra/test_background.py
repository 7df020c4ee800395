"""The background writer thread (infra/background.py): started on demand, ended when no work
is left, never leaving behind work woken for during its last round."""

import threading

import pytest

from infra.background import BackgroundWriter
from tests.e2e.processes import wait_for


def test_the_thread_ends_with_no_work_and_starts_again_when_woken():
    rounds = []
    writer = BackgroundWriter("test-writer", lambda: rounds.append(1) and False, lambda: 0.01)
    assert not writer.running
    writer.wake()
    wait_for(lambda: len(rounds) == 1 and not writer.running)
    writer.wake()
    wait_for(lambda: len(rounds) == 2 and not writer.running)


@pytest.mark.parametrize("ending", ["nothing left", "raises"])
def test_work_woken_for_during_the_last_round_is_not_stranded(ending):
    """The round finds nothing left, or raises, but a wake() came while it ran: one more round
    runs at once, with no further wake()."""
    in_round, woken, rounds = threading.Event(), threading.Event(), []

    def work_round() -> bool:
        rounds.append(1)
        if len(rounds) == 1:
            in_round.set()
            woken.wait(5)
            if ending == "raises":
                raise RuntimeError("the database went away mid-round")
        return False

    writer = BackgroundWriter("test-writer", work_round, lambda: 0.01)
    writer.wake()
    assert in_round.wait(5)
    writer.wake()  # during the round
    woken.set()
    wait_for(lambda: len(rounds) == 2 and not writer.running)


def test_a_round_that_raises_is_logged_and_the_next_wake_starts_a_fresh_thread(caplog):
    """Before, the dead thread left the writer marked running: nothing was written again."""
    rounds = []

    def work_round() -> bool:
        rounds.append(1)
        if len(rounds) == 1:
            raise RuntimeError("the database went away mid-round")
        return False

    writer = BackgroundWriter("test-writer", work_round, lambda: 0.01)
    writer.wake()
    wait_for(lambda: len(rounds) == 1 and not writer.running)
    assert "test-writer: a round failed; the thread ends" in caplog.text
    writer.wake()
    wait_for(lambda: len(rounds) == 2 and not writer.running)
