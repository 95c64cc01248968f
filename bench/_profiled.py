"""`switchboard serve` under cProfile, for `overhead.py --profile FILE`: the event loop's
thread is profiled (its own CPU time) from SIGUSR1 (sent after the warm-up) to SIGUSR2 (after the measured
turns), which writes the stats to $BENCH_PROFILE_OUT."""

from __future__ import annotations

import cProfile
import os
import signal
import sys
import time

from switchboard.__main__ import main

profile = cProfile.Profile(time.thread_time)  # CPU of this thread: not the waits for the GIL


def _dump(*_: object) -> None:
    profile.disable()
    profile.dump_stats(os.environ["BENCH_PROFILE_OUT"])


signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
signal.signal(signal.SIGUSR2, _dump)
sys.exit(main(sys.argv[1:]))
