"""QueryGuard: idle → dispatching → running → idle, generations, and the cancel-and-resubmit race."""

from codeloop.input.guard import GuardStatus, QueryGuard


def test_full_cycle():
    g = QueryGuard()
    assert not g.is_active and g.status is GuardStatus.IDLE
    assert g.reserve() and g.status is GuardStatus.DISPATCHING and g.is_active
    gen = g.try_start()
    assert gen == 1 and g.status is GuardStatus.RUNNING
    assert g.end(gen) and not g.is_active


def test_generations_increase_monotonically():
    g = QueryGuard()
    gens = []
    for _ in range(3):
        g.reserve()
        gens.append(g.try_start())
        g.end(gens[-1])
    assert gens == [1, 2, 3]


def test_try_start_while_running_returns_none():
    g = QueryGuard()
    g.reserve()
    gen = g.try_start()
    assert g.try_start() is None
    assert g.reserve() is False and g.status is GuardStatus.RUNNING
    assert g.end(gen)


def test_cancel_reservation_only_undoes_dispatching():
    g = QueryGuard()
    g.cancel_reservation()
    assert g.status is GuardStatus.IDLE
    g.reserve()
    g.cancel_reservation()
    assert g.status is GuardStatus.IDLE
    g.reserve()
    gen = g.try_start()
    g.cancel_reservation()  # the finally of executeUserInput while the query still runs
    assert g.status is GuardStatus.RUNNING
    assert g.end(gen)


def test_stale_end_cannot_clean_up_the_new_query():
    g = QueryGuard()
    g.reserve()
    old = g.try_start()
    assert g.end(old)        # the old query ends…
    g.reserve()
    new = g.try_start()      # …the user resubmits, and a late second cleanup of the old one comes in
    assert new == old + 1
    assert g.end(old) is False and g.status is GuardStatus.RUNNING
    assert g.end(new) is True and g.status is GuardStatus.IDLE


def test_end_twice_is_a_no_op():
    g = QueryGuard()
    gen = g.try_start()  # starting from idle is allowed
    assert g.end(gen) and not g.end(gen)
