"""Progress of a run's long phases (reading, graph, fitting), on a terminal and in the state file.

A phase shows its elapsed time and, when given a counter, a live figure such as the solver's
round trips so far, so an outer loop that takes minutes visibly moves. On a terminal the line is
redrawn in place; elsewhere (a log, a detached worker) only the start and end are written.
"""

from __future__ import annotations

import contextlib
import threading
import time


class Progress:
    """Announces phases and keeps ``on_change(phase, detail)`` informed (the run state file).

    Parameters
    ----------
    stream : file or None
        Where to print; None prints nothing (a detached run).
    on_change : callable, optional
        Called at each phase start and end and at most every ``every`` seconds in between.
    every : float
        Seconds between live updates.
    """

    def __init__(self, stream, on_change=None, every: float = 0.5):
        self.stream = stream
        self.on_change = on_change
        self.every = every
        self.timings: dict[str, float] = {}
        #: CPU seconds (user + system) of this whole process per phase: its worker threads'
        #: included, and far less sensitive than ``timings`` to other work on the host.
        self.cpu_timings: dict[str, float] = {}
        # (wall, CPU) clocks where the last phase ended: the next one is counted from there,
        # so the set-up between two phases (building an estimator, importing its module,
        # waiting for the GIL on a loaded host) lands in a phase and the phases add up to
        # the run.
        self._since: tuple[float, float] | None = None

    def start(self) -> tuple[float, float]:
        """The (wall, CPU) clocks a phase starting now is counted from: where the one before
        it ended, or now for the first."""
        return self._since or (time.perf_counter(), time.process_time())

    def record(self, name: str, seconds: float, cpu_seconds: float) -> None:
        """Add ``seconds`` (and CPU seconds) to phase ``name``, ending it now."""
        self.timings[name] = self.timings.get(name, 0.0) + seconds
        self.cpu_timings[name] = self.cpu_timings.get(name, 0.0) + cpu_seconds
        self._since = (time.perf_counter(), time.process_time())

    def finish(self, name: str, since: tuple[float, float]) -> None:
        """End phase ``name``, counted from ``since`` (from :meth:`start`)."""
        self.record(name, time.perf_counter() - since[0], time.process_time() - since[1])

    def _live(self) -> bool:
        return self.stream is not None and getattr(self.stream, "isatty", lambda: False)()

    def say(self, text: str) -> None:
        if self.stream is not None:
            print(text, file=self.stream, flush=True)

    @contextlib.contextmanager
    def phase(self, name: str, counter=None, unit: str = ""):
        """Time the ``with`` body as phase ``name`` (from the end of the phase before it);
        ``counter()`` gives a live figure."""
        since = self.start()
        t0 = since[0]
        stop = threading.Event()

        def detail() -> str:
            figure = f", {counter()} {unit}" if counter is not None else ""
            return f"{time.perf_counter() - t0:.1f} s{figure}"

        def tick():
            while not stop.wait(self.every):
                if self._live():
                    self.stream.write(f"\r  {name}: {detail()}   ")
                    self.stream.flush()
                if self.on_change is not None:
                    self.on_change(name, detail())

        if self.on_change is not None:
            self.on_change(name, "started")
        if not self._live():
            self.say(f"  {name} ...")
        thread = threading.Thread(target=tick, daemon=True, name=f"progress-{name}")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.finish(name, since)
            end = f"  {name}: done in {detail()}"
            if self._live():
                self.stream.write("\r" + end + "   \n")
                self.stream.flush()
            else:
                self.say(end)
