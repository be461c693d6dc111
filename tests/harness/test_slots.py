"""The turn slots of a run: at most n turns at once, re-entrant per unit, queueing left out of a unit's time."""
from __future__ import annotations

import threading
import time

import pytest
from obai_e2e.base.errors import Interrupted
from obai_e2e.base.procs import STOPPING
from obai_e2e.drive.slots import Slots, UnitSlot


def entering(unit: UnitSlot) -> tuple[threading.Thread, threading.Event]:
    """A thread that enters ``unit``'s slot, and the event it sets once it holds it."""
    got = threading.Event()
    thread = threading.Thread(target=lambda: (unit.__enter__(), got.set()))
    thread.start()
    return thread, got


def leaving(unit: UnitSlot, thread: threading.Thread) -> None:
    """Give back the slot ``thread`` took for ``unit``."""
    unit.__exit__(None, None, None)
    thread.join(10)


def test_without_slots_a_unit_holds_nothing():
    slot = UnitSlot()
    with slot, slot:
        pass
    assert slot.queued_s == 0.0


def test_a_unit_queues_until_the_holder_gives_its_slot_back():
    slots = Slots(1)
    first, second = slots.for_unit(), slots.for_unit()
    entered = threading.Event()

    def take() -> None:
        with second:
            entered.set()

    with first:
        waiter = threading.Thread(target=take)
        waiter.start()
        assert not entered.wait(0.3)  # the only slot is held
    assert entered.wait(10)
    waiter.join(10)
    assert second.queued_s >= 0.25 and first.queued_s < 0.25


def test_a_unit_holding_its_slot_can_enter_it_again():
    slots = Slots(1)
    unit = slots.for_unit()
    with unit:
        with unit:  # the whole unit holds it and a turn inside asks again
            pass
        other = slots.for_unit()
        t, got = entering(other)
        assert not got.wait(0.2)  # still held after the inner exit
    assert got.wait(10)
    leaving(other, t)


def test_n_slots_admit_n_units_at_once():
    slots = Slots(2)
    a, b, c = slots.for_unit(), slots.for_unit(), slots.for_unit()
    with a, b:
        t, got = entering(c)
        assert not got.wait(0.2)
    assert got.wait(10)
    leaving(c, t)


def test_a_queued_unit_stops_with_the_run():
    slots = Slots(1)
    holder, queued = slots.for_unit(), slots.for_unit()
    raised: list[BaseException] = []

    def take() -> None:
        try:
            with queued:
                pass
        except Interrupted as exc:
            raised.append(exc)

    with holder:
        t = threading.Thread(target=take)
        t.start()
        time.sleep(0.15)
        STOPPING.set()
        try:
            t.join(10)
        finally:
            STOPPING.clear()
    assert raised and "not started" in str(raised[0])


def test_slots_refuse_a_count_below_one():
    with pytest.raises(ValueError, match="0 is not a positive count"):
        Slots(0)


def test_units_take_their_first_turn_in_the_order_they_were_handed_out():
    slots = Slots(1)
    units = [slots.for_unit() for _ in range(4)]
    order: list[int] = []
    lock = threading.Lock()

    def turn(i: int) -> None:
        with units[i]:
            with lock:
                order.append(i)
            time.sleep(0.01)

    threads = [threading.Thread(target=turn, args=(i,)) for i in (3, 1, 2, 0)]  # started out of order
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3]


def test_a_unit_that_never_takes_a_turn_lets_the_next_one_go():
    slots = Slots(1)
    skipped, nxt = slots.for_unit(), slots.for_unit()
    t, got = entering(nxt)
    assert not got.wait(0.2)  # waits for the earlier unit's first turn
    skipped.close()
    assert got.wait(10)
    leaving(nxt, t)


def test_a_follow_up_turn_takes_any_free_slot():
    slots = Slots(1)
    early, late = slots.for_unit(), slots.for_unit()
    with early:
        pass
    with late:  # the later unit's first turn
        pass
    follow = threading.Thread(target=lambda: early.__enter__())  # the earlier unit's follow-up
    follow.start()
    follow.join(5)
    assert not follow.is_alive()  # not held back by the order
    early.__exit__(None, None, None)


def test_window_mode_keeps_turns_with_the_same_query_apart():
    """Two slots free, but a second turn asking the same waits for the first to end, plus the window's slack."""
    slots = Slots(2, apart_s=0.3)
    first, same, other = slots.for_unit(), slots.for_unit(), slots.for_unit()
    first.asking("q").__enter__()
    t_same, got_same = entering(same.asking("q"))
    assert not got_same.wait(0.2)  # the same query is being asked
    # The queue keeps the plan's order: the third unit waits behind the second.
    t_other, got_other = entering(other.asking("another"))
    first.__exit__(None, None, None)
    ended = time.monotonic()
    assert got_same.wait(10) and time.monotonic() - ended >= 0.25  # and then the slack
    assert got_other.wait(10)
    leaving(same, t_same)
    leaving(other, t_other)


def test_without_a_window_the_same_query_may_overlap():
    slots = Slots(2)
    first, same = slots.for_unit(), slots.for_unit()
    first.asking("q").__enter__()
    t, got = entering(same.asking("q"))
    assert got.wait(10)
    first.__exit__(None, None, None)
    leaving(same, t)
