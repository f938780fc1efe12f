"""Issue 31: print mode's start-up runs without cyclic collections, and collecting resumes (with
start-up's objects frozen) once the session is open; a collector someone else turned off stays off."""

import gc

from codeloop.cli.startup import collector


def test_pause_then_startup_done_freezes_and_collects_again():
    assert gc.isenabled()
    try:
        collector.pause()
        assert not gc.isenabled()
        kept = [[] for _ in range(10)]   # made during start-up
        collector.startup_done()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        collector.startup_done()         # once only
        assert gc.isenabled()
        assert kept
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_collector_turned_off_elsewhere_is_left_off():
    gc.disable()
    try:
        collector.pause()
        collector.startup_done()
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_resume_collects_again_without_freezing():
    assert gc.isenabled()
    try:
        collector.pause()
        assert not gc.isenabled()
        collector.resume()
        assert gc.isenabled() and gc.get_freeze_count() == 0
        collector.startup_done()    # nothing paused any more: nothing frozen
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
        gc.unfreeze()


def test_resume_leaves_a_collector_turned_off_elsewhere_off():
    gc.disable()
    try:
        collector.pause()
        collector.resume()
        assert not gc.isenabled()
    finally:
        gc.enable()
