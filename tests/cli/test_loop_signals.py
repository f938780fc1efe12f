"""cli.headless.loop_signals: `run` applies asyncio.run's SIGINT rule with its own handler, `handle`
gives SIGINT/SIGTERM to a callback in the loop (woken through the wakeup socket whichever thread
the signal reached) and gives them back; each test runs in a fresh interpreter's main thread."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_first_sigint_cancels_the_main_task_and_the_run_ends_in_keyboard_interrupt():
    out = _run("""
        import asyncio, json, signal
        from codeloop.cli.headless import loop_signals
        seen = {}
        async def main():
            try:
                signal.raise_signal(signal.SIGINT)
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                seen["cancelled"] = True
                try:
                    signal.raise_signal(signal.SIGINT)   # a second one: at once
                except KeyboardInterrupt:
                    seen["second"] = "KeyboardInterrupt"
                raise
        try:
            loop_signals.run(main())
        except KeyboardInterrupt:
            seen["run"] = "KeyboardInterrupt"
        seen["restored"] = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        print(json.dumps(seen))
    """)
    assert out == {"cancelled": True, "second": "KeyboardInterrupt", "run": "KeyboardInterrupt", "restored": True}


def test_a_run_without_signals_returns_its_result_and_leaves_sigint_as_it_was():
    out = _run("""
        import asyncio, json, signal
        from codeloop.cli.headless import loop_signals
        async def main():
            return signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        taken = loop_signals.run(main())
        print(json.dumps({"taken": taken, "restored": signal.getsignal(signal.SIGINT) is signal.default_int_handler}))
    """)
    assert out == {"taken": True, "restored": True}


def test_handle_gives_the_signals_to_the_callback_in_the_loop_then_gives_them_back():
    out = _run("""
        import asyncio, json, os, signal, threading
        from codeloop.cli.headless import loop_signals
        got = []
        async def main():
            loop = asyncio.get_running_loop()
            done = loop.create_future()
            def callback(signum):
                got.append([signal.Signals(signum).name, asyncio.get_running_loop() is loop])
                if len(got) == 2:
                    done.set_result(None)
            give_back = loop_signals.handle(callback)
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(done, 30)
            give_back()
            give_back()   # twice: nothing more
            previous_fd = signal.set_wakeup_fd(-1)
            return {"got": got, "term": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
                    "int_is_runs": signal.getsignal(signal.SIGINT) is loop_signals._on_sigint,
                    "wakeup_fd": previous_fd}
        print(json.dumps(loop_signals.run(main())))
    """)
    assert out == {"got": [["SIGINT", True], ["SIGTERM", True]], "term": True, "int_is_runs": True, "wakeup_fd": -1}


def test_a_signal_that_reaches_another_thread_still_wakes_the_loop():
    """The loop sleeps in select with nothing due; SIGTERM is delivered to a helper thread (whose
    Python handler could only run on the main thread): the wakeup socket wakes the loop."""
    out = _run("""
        import asyncio, json, signal, threading
        from codeloop.cli.headless import loop_signals
        async def main():
            loop = asyncio.get_running_loop()
            done = loop.create_future()
            give_back = loop_signals.handle(lambda signum: done.set_result(signal.Signals(signum).name))
            threading.Thread(target=lambda: signal.pthread_kill(threading.get_ident(), signal.SIGTERM)).start()
            try:
                return await asyncio.wait_for(done, 60)
            finally:
                give_back()
        print(json.dumps({"got": loop_signals.run(main())}))
    """)
    assert out == {"got": "SIGTERM"}


def test_handle_off_the_main_thread_is_refused_as_asyncio_refuses_it():
    out = _run("""
        import asyncio, json, threading
        from codeloop.cli.headless import loop_signals
        result = {}
        def worker():
            async def main():
                try:
                    loop_signals.handle(lambda s: None)
                except ValueError as exc:
                    return "ValueError"
                return "installed"
            result["worker"] = loop_signals.run(main())   # not the main thread: plain asyncio.run
        t = threading.Thread(target=worker)
        t.start(); t.join()
        print(json.dumps(result))
    """)
    assert out == {"worker": "ValueError"}
