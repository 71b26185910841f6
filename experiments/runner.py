"""Where an experiment's runs execute (issue #45): in this process one after another
(``serial``), on a local process pool (``pool``, every core by default) or on a Ray cluster
(``ray``: one already running, or a local one), with the same results run by run.

A run is a function of its case and the options that affect it (``Experiment.run_options``),
so where it runs cannot change its output. Runs stream, as they finish, to ``runs.jsonl`` in
the ``--out`` folder: one record per run, keyed by a hash of the experiment, the case, those
options and octoric's sources; the same command again skips the runs the file holds (a crash
or Ctrl-C loses only the runs in flight), and ``octoric eval report DIR`` rebuilds the
results from the file alone. Every output goes through its JSON record before the results are
made from it, so a resumed run gives the results an uninterrupted one does.

Runs marked ``alone`` (a Case's or the Experiment's: live-RIC runs, browsers) need a machine
to themselves: they run after the others, here, one at a time. Ctrl-C stops every worker (the
pool's processes, a local Ray cluster) before the command returns.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import multiprocessing
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TextIO

from octoric.errors import OctoricError
from octoric.experiments.experiment import (
    EXPERIMENTS,
    REPORT,
    RESULTS,
    Case,
    Experiment,
    RunOptions,
    load,
    validate,
    write_json,
    write_report,
)

RUNS = "runs.jsonl"
Kind = Literal["serial", "pool", "ray"]
WIDTH = 80  # a progress line's columns


def cores() -> int:
    """The cores this process may use (a container's or taskset's limit, not the host's)."""
    return len(os.sched_getaffinity(0)) or 1


@dataclass(frozen=True)
class Backend:
    """Where runs execute. ``ray``: ``address`` is ``local`` (a cluster of ``workers`` CPUs
    started here, stopped at the end), ``auto`` (the cluster ``ray start`` runs on this
    machine) or a head's address (``host:6379``)."""

    kind: Kind = "pool"
    workers: int = 1
    address: str | None = None


# -- executing tasks ---------------------------------------------------------------------------


@dataclass
class Done:
    """One task's end: its index in the submitted list, and its value or its error (one
    line, and its traceback)."""

    index: int
    value: Any = None
    error: str | None = None
    traceback: str = ""


def _failed(index: int, e: BaseException, summary: str | None = None) -> Done:
    detail = "".join(traceback.format_exception(e))
    return Done(index, error=summary or f"{type(e).__name__}: {e}".strip(), traceback=detail)


def execute(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]],
            backend: Backend) -> Iterator[Done]:  # fmt: skip
    """``fn(*task)`` for every task on ``backend``, yielded as each finishes (any order). A
    task's exception is its ``Done.error``; the others carry on. Leaving the iterator early (an
    exception, Ctrl-C, ``close()``) stops the workers: none outlives it."""
    if not tasks:
        return iter(())
    if backend.kind == "serial":
        return _serial(fn, tasks)
    if backend.kind == "pool":
        return _pool(fn, tasks, backend.workers)
    return _ray(fn, tasks, backend)


def _serial(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]]) -> Iterator[Done]:
    for i, t in enumerate(tasks):
        try:
            value = fn(*t)
        except Exception as e:  # a failed run is reported with its case; the others go on
            yield _failed(i, e)
        else:
            yield Done(i, value)


def _worker_start(parent: int) -> None:
    """A pool worker's start: Ctrl-C at the terminal reaches the whole process group, but
    stopping the workers is the parent's job (it terminates them); and the worker dies with its
    parent, even a SIGKILLed one (Linux's parent-death signal), rather than idle on forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _pool(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]],
          workers: int) -> Iterator[Done]:  # fmt: skip
    # spawn: each worker is a fresh interpreter, as a Ray worker is, so a run that leans on
    # state inherited from this process fails here rather than on a cluster
    ctx = multiprocessing.get_context("spawn")
    before = set(multiprocessing.active_children())
    ex = ProcessPoolExecutor(min(workers, len(tasks)), mp_context=ctx,
                             initializer=_worker_start, initargs=(os.getpid(),))  # fmt: skip
    try:
        index: dict[Future[Any], int] = {ex.submit(fn, *t): i for i, t in enumerate(tasks)}
        pending = set(index)
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=index.__getitem__):
                e = f.exception()  # its traceback in the worker is its __cause__
                yield _failed(index[f], e) if e else Done(index[f], f.result())
    finally:
        ex.shutdown(wait=False, cancel_futures=True)
        # runs still in flight would hold the command (and its exit) until they end
        for p in set(multiprocessing.active_children()) - before:
            p.terminate()
        for p in set(multiprocessing.active_children()) - before:
            p.join(5)
            if p.is_alive():
                p.kill()
        ex.shutdown(wait=True)


@contextmanager
def connected(backend: Backend) -> Iterator[Backend]:
    """The backend ready to run on: for Ray, joined (or started, ``local``) with its CPUs as
    ``workers``, and left (or stopped) at the end."""
    if backend.kind != "ray":
        yield backend
        return
    import ray

    try:
        yield replace(backend, workers=ray_connect(backend))
    finally:
        ray.shutdown()  # a local cluster stops; an existing one only loses this driver


def ray_connect(backend: Backend) -> int:
    """Join (or start, for ``local``) the Ray cluster; its CPUs."""
    try:
        import ray
    except ImportError:
        raise OctoricError("--ray needs Ray in this Python: make setup installs it "
                           "(requirements.lock)") from None  # fmt: skip
    if not ray.is_initialized():
        quiet: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
        if backend.address == "local":
            # a new cluster of our own (without address="local", Ray joins one that `ray
            # start` left on this machine) whose node is 127.0.0.1; Ray 2.60's servers still
            # listen on every interface, behind its token authentication
            ray.init(address="local", num_cpus=backend.workers, include_dashboard=False,
                     _node_ip_address="127.0.0.1", **quiet)  # fmt: skip
        else:
            _reachable(backend.address or "auto")
            try:
                ray.init(address=backend.address, **quiet)
            except ConnectionError as e:
                raise OctoricError(f"--ray {backend.address}: {e} (experiments/README.md, "
                                   "\"On an existing Ray cluster\")") from None  # fmt: skip
    cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    return int(cpus)


def _reachable(address: str) -> None:
    """Refuse a head nothing answers at: Ray would retry for minutes, a line of warnings
    every few seconds."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto": Ray finds the cluster on this machine
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise OctoricError(f"--ray {address}: no Ray head answers there ({e})") from None


def _ray(fn: Callable[..., Any], tasks: Sequence[tuple[Any, ...]],
         backend: Backend) -> Iterator[Done]:  # fmt: skip
    import ray
    from ray.exceptions import RayError, RayTaskError

    ours = not ray.is_initialized()  # else the caller's (``connected``) to leave
    if ours:
        ray_connect(backend)
    pending: list[Any] = []
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = {task.remote(*t): i for i, t in enumerate(tasks)}
        pending = list(refs)
        while pending:
            finished, pending = ray.wait(pending, num_returns=1)
            for ref in finished:
                try:
                    yield Done(refs[ref], ray.get(ref))
                except RayTaskError as e:  # the run's own exception, without Ray's wrapping
                    cause = e.cause or e
                    summary = _ray_error(cause) if isinstance(cause, RayError) else None
                    yield replace(_failed(refs[ref], cause, summary), traceback=str(e))
                except RayError as e:  # its worker died, its module is missing, ...
                    yield _failed(refs[ref], e, _ray_error(e))
    finally:
        # a local cluster's shutdown ends its tasks with it; on a cluster of others', the
        # unfinished ones are interrupted. Not force=True: a task finishing as it is killed
        # aborts the driver (Ray 2.60: "Tried to complete task that was not pending")
        if backend.address != "local":
            for ref in pending:
                ray.cancel(ref)
        if ours:
            ray.shutdown()


def _ray_error(e: BaseException) -> str:
    """Ray's own errors, without their class and "System error: " preamble."""
    return str(e).removeprefix("System error: ").strip().splitlines()[0]


# -- progress ----------------------------------------------------------------------------------


def _duration(s: float) -> str:
    s = round(s)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """One line per finished run on stderr, cut to 80 columns: ``[eval] 12/40 ETA 3m05s
    what``; a failed run: ``[eval] FAILED what: error``. The ETA is this command's pace so far
    (runs skipped from an earlier one do not count)."""

    def __init__(self, total: int, done: int = 0, out: TextIO | None = None) -> None:
        self.total, self.done, self.ran = total, done, 0
        self.t0 = time.monotonic()
        self.out = out if out is not None else sys.stderr

    def line(self, text: str) -> None:
        print(text if len(text) <= WIDTH else text[: WIDTH - 1] + "…", file=self.out, flush=True)

    def finished(self, what: str) -> None:
        self.done, self.ran = self.done + 1, self.ran + 1
        left = self.total - self.done
        pace = (time.monotonic() - self.t0) / self.ran
        eta = f"ETA {_duration(pace * left)}" if left else "done"
        self.line(f"[eval] {self.done}/{self.total} {eta} {what}")

    def failed(self, what: str, error: str) -> None:
        self.ran += 1
        self.line(f"[eval] FAILED {what}: {error.splitlines()[0] if error else '?'}")


# -- one experiment's runs ---------------------------------------------------------------------


def case_json(case: Case) -> dict[str, Any]:
    """What identifies a case (its label and ``alone`` mark do not change its output)."""
    return {"part": case.part, "row": case.row, "scheme": case.scheme, "seed": case.seed}


def options_json(opts: RunOptions) -> dict[str, Any]:
    """The command's options as runs.jsonl keeps them; the trace folder as this command found
    it ($OCTORIC_TRACES too), so a rebuilt report names the same one."""
    return {"quick": opts.quick, "seeds": opts.seeds, "traces": str(opts.traces_path),
            "plots": opts.plots, "extra": opts.extra}  # fmt: skip


def options_from(d: dict[str, Any], out: Path) -> RunOptions:
    return RunOptions(out, d["quick"], d["seeds"], d["traces"], d["plots"], d["extra"])


def code_version() -> str:
    """A hash of octoric's Python sources (the package and the areas it links): a run made by
    other code is another run."""
    import octoric

    root = Path(octoric.__file__).resolve().parent
    h = hashlib.sha256()
    # followlinks: octoric/<area> are links to the checkout's top-level folders
    for folder, dirs, files in sorted(os.walk(root, followlinks=True)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for f in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / f
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def run_key(exp: Experiment, case: Case, opts: RunOptions, code: str) -> str:
    """A run's key in ``runs.jsonl``: the experiment, the case, the options its output depends
    on and the code (``code_version``); a changed option or source gives new keys, so no
    stale run is reused."""
    what = {"experiment": exp.name, "case": case_json(case), "options": exp.run_options(opts),
            "code": code}  # fmt: skip
    blob = json.dumps(what, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def run_one(exp: Experiment, case: Case, opts: RunOptions) -> dict[str, Any]:
    """One run where the backend put it: its JSON output and where and how long it ran."""
    t0, started = time.monotonic(), time.time()
    output = exp.encode(exp.run_case(case, opts))
    return {"output": output, "wall_s": round(time.monotonic() - t0, 3),
            "started": round(started, 3), "ended": round(time.time(), 3),
            "host": socket.gethostname(), "pid": os.getpid()}  # fmt: skip


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, default=str, separators=(",", ":"))


class RunLog:
    """``runs.jsonl``: a ``start`` record per command (its options and cases: enough for
    ``octoric eval report`` to rebuild the results), then a ``run`` record per finished run
    and a ``failed`` one per failed run. Only this process writes it, a line at a time."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / RUNS

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # the line a killed run was writing
                continue
        return out

    def finished(self) -> dict[str, dict[str, Any]]:
        """Every finished run by key (the last, if one ran twice)."""
        return {r["key"]: r for r in self.records() if r.get("kind") == "run"}

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write a record; returns it as read back, the form every result is made from."""
        line = _dumps(record)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+b") as f:
            if f.tell() and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n":
                f.write(b"\n")  # end the line a killed run left half-written
            f.write(line.encode() + b"\n")
        parsed: dict[str, Any] = json.loads(line)
        return parsed


@dataclass
class Outcome:
    """What ``run`` did: the results document (None when a run failed), the runs done now and
    before, and the failures (case, error)."""

    doc: dict[str, Any] | None
    ran: int
    resumed: int
    failures: list[tuple[Case, str]]


def run(exp: Experiment, opts: RunOptions, backend: Backend,
        out: TextIO | None = None) -> Outcome:  # fmt: skip
    """Every case not already in ``--out``'s runs.jsonl, on ``backend``; then, when all are
    there, report.md, results.json and the PNGs."""
    validate(exp, opts)
    cases = exp.cases(opts)
    code = code_version()  # once: the sources as this command starts
    keys = [run_key(exp, c, opts, code) for c in cases]
    log = RunLog(opts.out)
    have = log.finished()
    todo = [i for i, k in enumerate(keys) if k not in have]
    resumed = len(cases) - len(todo)
    alone = [i for i in todo if exp.alone or cases[i].alone]
    shared = [i for i in todo if i not in set(alone)]
    progress = Progress(len(cases), resumed, out)
    failures: list[tuple[Case, str]] = []
    with connected(backend if shared else replace(backend, kind="serial")) as ready:
        if ready.kind == backend.kind:
            backend = ready  # a Ray cluster's CPUs
        runner = {"backend": backend.kind, "workers": backend.workers,
                  "address": backend.address, "runs": len(cases), "resumed": resumed}  # fmt: skip
        log.append({"kind": "start", "experiment": exp.name, "options": options_json(opts),
                    "cases": [{"key": k, **case_json(c)} for k, c in zip(keys, cases, strict=True)],
                    "runner": runner, "time": time.time()})  # fmt: skip
        if resumed:
            progress.line(f"[eval] {resumed} of {len(cases)} runs already in {log.path}: skipped")
        # the trace folder as every worker must find it: this one's absolute path
        worker_opts = replace(opts, traces=str(opts.traces_path.resolve()))
        # the runs that need the machine to themselves: after the others, here, one at a time
        for batch, where in ((shared, ready), (alone, Backend("serial"))):
            tasks = [(exp, cases[i], worker_opts) for i in batch]
            try:
                for d in execute(run_one, tasks, where):
                    i = batch[d.index]
                    c = cases[i]
                    if d.error is None:
                        have[keys[i]] = log.append({"kind": "run", "key": keys[i],
                                                    "case": case_json(c), **d.value})  # fmt: skip
                        progress.finished(c.what)
                        continue
                    failures.append((c, d.error))
                    log.append({"kind": "failed", "key": keys[i], "case": case_json(c),
                                "error": d.error, "traceback": d.traceback})  # fmt: skip
                    progress.failed(c.what, d.error)
            except KeyboardInterrupt:  # the workers are stopped by now (``execute``)
                progress.line(f"[eval] interrupted: {progress.done} of {len(cases)} runs kept "
                              f"in {RUNS}; the same command resumes")  # fmt: skip
                raise
    if failures:
        progress.line(f"[eval] {len(failures)} of {len(cases)} runs failed (errors in {RUNS}); "
                      "run again to retry them")  # fmt: skip
        return Outcome(None, len(todo) - len(failures), resumed, failures)
    outputs = [exp.decode(c, have[k]["output"]) for c, k in zip(cases, keys, strict=True)]
    doc = {**exp.document(exp.results(opts, cases, outputs)), "runner": runner}
    opts.out.mkdir(parents=True, exist_ok=True)
    write_json(opts.out / RESULTS, doc)
    pngs = exp.plots(doc, outputs, opts.out, opts) if opts.plots else []
    write_report(exp, doc, opts.out / REPORT)
    written = ", ".join(str(p) for p in [opts.out / REPORT, opts.out / RESULTS, *pngs])
    progress.line(f"[eval] wrote {written}")
    return Outcome(doc, len(todo), resumed, [])


def from_runs(folder: Path) -> tuple[Experiment, dict[str, Any]]:
    """The results document again from ``folder``'s runs.jsonl alone (the last command's
    options and cases, each case's finished run)."""
    log = RunLog(folder)
    records = log.records()
    start = next((r for r in reversed(records) if r.get("kind") == "start"), None)
    if start is None:
        raise OctoricError(f"{log.path}: no run started in it")
    name = start["experiment"]
    if name not in EXPERIMENTS:
        raise OctoricError(f"{log.path}: no known experiment named in it ({name!r})")
    exp, opts = EXPERIMENTS[name], options_from(start["options"], folder)
    runs = {r["key"]: r for r in records if r.get("kind") == "run"}
    missing = [c for c in start["cases"] if c["key"] not in runs]
    if missing:
        raise OctoricError(f"{log.path}: {len(missing)} of {len(start['cases'])} runs not "
                           f"finished (run `octoric eval {name}` with the same options again "
                           "to finish them)")  # fmt: skip
    cases = [Case(c["part"], c["row"], c["scheme"], c["seed"]) for c in start["cases"]]
    outputs = [exp.decode(c, runs[k["key"]]["output"])
               for c, k in zip(cases, start["cases"], strict=True)]  # fmt: skip
    return exp, {**exp.document(exp.results(opts, cases, outputs)), "runner": start["runner"]}


def rebuild(path: Path, out: Path | None = None) -> Path:
    """``octoric eval report``: the report again without simulating: from a folder's
    runs.jsonl (also writing its results.json), else from its results.json or the JSON given
    (the claims judged again, e.g. after a change of the verdict rule; the PNGs stay as they
    are)."""
    if path.is_dir() and (path / RUNS).exists():
        exp, doc = from_runs(path)
        write_json(path / RESULTS, doc)
    else:
        exp, doc = load(path)
    if out is None:
        out = path / REPORT if path.is_dir() else path.with_suffix(".md")
    write_report(exp, doc, out)
    print(f"[eval] wrote {out}", file=sys.stderr)
    return out
