"""Sweep tasks on a Dask distributed cluster (``run_tasks(..., executor="dask")``).

Where the tasks go is a :class:`DaskTarget`: without an address a
:class:`distributed.LocalCluster` is started with ``jobs`` worker processes of one
thread each (and shut down at the end); with an address such as ``tls://host:8786``
the tasks go to that cluster, whose workers must have DenseHMM Studio installed (the
same version).

The local cluster is private to the process that starts it:

* Dask's temporary TLS credentials (``Security.temporary()``: a key and a self-signed
  certificate made for this run, held in memory and handed to the worker processes by
  their nannies), so a client or worker without them cannot connect, submit or join;
* the scheduler, the nannies, the workers and their HTTP servers listen on 127.0.0.1 only;
* the HTTP servers serve nothing (no routes) unless the dashboard is asked for
  (``DaskTarget(dashboard=True)``, ``--dashboard``): then the scheduler's serves Dask's
  dashboard on ``127.0.0.1`` (plain HTTP, readable by the users of this machine).

A local cluster's workers are forked by multiprocessing's forkserver (where the platform has
one), which :func:`run_on_dask` starts before anything else (:func:`start_forkserver`): it
imports Dask, numpy and, when the tasks use TensorFlow, TensorFlow once, while this process
sets up, so that no worker imports them again.

A named cluster is trusted: Dask returns results as pickles, so whoever controls its
scheduler or a worker can run code in this process.  TLS there uses the files of the
target (``tls_ca_file``, ``tls_cert``, ``tls_key``) or Dask's own TLS configuration
(``distributed.comm.tls.*``) for a ``tls://`` address.

Connecting never outlasts its timeout: the address is checked first (one line for a
malformed one), then a probe connects, does Dask's handshake and asks the scheduler who it
is, all under one deadline in a loop of its own (Dask's ``Client`` waits for the
handshake without a timeout: a server that accepts and never answers would hang it), and
only then is the ``Client`` made; a ``Client`` that fails to start is closed at once (no
``Client.__del__`` stall at exit).

What crosses the network: the shared object of the sweep (its corpus, as integer
arrays) once per worker (``scatter(..., broadcast=True)``), and per task the
name of its function, its keyword arguments (a few numbers and the settings
dict) and back its result rows (plain numbers and strings).  No model crosses
the network: a task that saves models writes them to the output folder itself.

A worker that dies takes its running task with it; the scheduler runs that task
again on another worker (Dask's own bookkeeping, up to
``distributed.scheduler.allowed-failures`` times).  A task that raises runs once:
``call`` (the runner's ``call_task``) catches its exception on the worker and it is
reported as failed (a rerun of the sweep retries it; tasks are submitted without Dask's
``retries``, which would only see an exception that escapes ``call``).  Every task is
seeded from its key, so a rerun gives the same numbers.

Importing this module does not import Dask; :func:`connect` does.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import traceback
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union

from .. import config
from ._env import EnvPatch

__all__ = ["SchedulerError", "DaskMissingError", "DaskTarget", "check_address", "connect", "run_on_dask",
           "DEFAULT_TIMEOUT_S"]

#: Seconds to wait for a scheduler (``$DENSEHMM_DASK_TIMEOUT`` overrides it).
DEFAULT_TIMEOUT_S = 10.0
#: The address of every listener of a local cluster.
LOOPBACK = "127.0.0.1"
# host:port, the host a name, an IPv4 address or a bracketed IPv6 address
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):([0-9]{1,5})$")


class SchedulerError(RuntimeError):
    """The Dask scheduler could not be reached or used (one-line message)."""


class DaskMissingError(RuntimeError):
    """Dask distributed (or what its TLS needs) is not installed (one-line message)."""


@dataclass(frozen=True)
class DaskTarget:
    """Where Dask tasks go.

    ``address`` None: a local cluster, private to this process (TLS with temporary
    credentials, loopback only); ``dashboard``: it also serves Dask's dashboard on
    127.0.0.1.  Otherwise the scheduler at ``address`` (``tcp://`` or ``tls://HOST:PORT``),
    with TLS from ``tls_ca_file``, ``tls_cert`` and ``tls_key`` (PEM files; the key may be
    in the certificate file) or, for a ``tls://`` address without them, from Dask's
    configuration.
    """

    address: Optional[str] = None
    tls_ca_file: Optional[str] = None
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None
    dashboard: bool = False

    @classmethod
    def of(cls, target: Union[None, str, "DaskTarget"]) -> "DaskTarget":
        """A target from ``None``/``"local"`` (a local cluster), an address or a target."""
        if isinstance(target, DaskTarget):
            return target
        return cls(address=None if target in (None, "", "local") else str(target))

    @property
    def tls_files(self) -> Tuple[Tuple[str, Optional[str]], ...]:
        return (("--tls-ca-file", self.tls_ca_file), ("--tls-cert", self.tls_cert), ("--tls-key", self.tls_key))

    def check(self) -> "DaskTarget":
        """This target with its address normalised; :class:`SchedulerError` (one line) if the
        address is malformed or the TLS options do not fit together.  Needs no Dask."""
        given = [opt for opt, path in self.tls_files if path]
        if self.address is None:
            if given:
                raise SchedulerError(f"{given[0]} is for a named cluster (--scheduler tls://HOST:PORT); "
                                     "the local cluster makes its own credentials")
            return self
        if self.dashboard:
            raise SchedulerError("--dashboard is for the local cluster; a named cluster serves its own")
        address = check_address(self.address)
        if given:
            if not address.startswith("tls://"):
                raise SchedulerError(f"{given[0]} needs a tls:// scheduler address, got {address}")
            for opt in ("--tls-ca-file", "--tls-cert"):
                if opt not in given:
                    raise SchedulerError(f"TLS needs both --tls-ca-file and --tls-cert (missing {opt})")
            for opt, path in self.tls_files:
                if path and not os.path.isfile(path):
                    raise SchedulerError(f"{opt}: file not found: {path}")
        return DaskTarget(address, self.tls_ca_file, self.tls_cert, self.tls_key, self.dashboard)

    def describe(self, jobs: int) -> str:
        if self.address is None:
            return f"a local cluster of {max(1, int(jobs))} worker processes"
        return self.address


def check_address(address: str) -> str:
    """``address`` as ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` (a bare ``HOST:PORT`` is
    ``tcp://``); :class:`SchedulerError` with one line otherwise."""
    text = str(address).strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "tcp", text
    bad = f"invalid Dask scheduler address {address!r}: expected tcp://HOST:PORT or tls://HOST:PORT"
    if scheme.lower() not in ("tcp", "tls"):
        raise SchedulerError(bad)
    m = _HOST_PORT.match(rest)
    if m is None or not 0 < int(m.group(2)) < 65536:
        raise SchedulerError(bad)
    return f"{scheme.lower()}://{m.group(1)}:{int(m.group(2))}"


def _timeout(timeout: Optional[float]) -> float:
    """``timeout``, else ``$DENSEHMM_DASK_TIMEOUT`` (:mod:`densehmm_core.config`) when positive, else 10."""
    if timeout is not None:
        return float(timeout)
    value = config.dask_timeout(DEFAULT_TIMEOUT_S)
    return value if value > 0 else DEFAULT_TIMEOUT_S


def _import_distributed():
    try:
        import distributed
    except ImportError as exc:  # an optional dependency
        raise DaskMissingError("the Dask executor needs 'dask[distributed]': "
                               "pip install 'densehmm-studio[dask]'") from exc
    return distributed


def _one_line(exc: BaseException) -> str:
    """``exc`` and its cause (Dask's "timed out" hides "connection refused" there) in one line."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) and not str(exc):
        return "no answer"
    text = " ".join(str(exc).split()) or type(exc).__name__
    cause = re.sub(r"^in <[^>]*>: ", "", " ".join(str(exc.__cause__ or "").split()))
    return f"{text} ({cause})" if cause and cause not in text else text


def _security(target: DaskTarget):
    """The ``distributed.Security`` of a named cluster, its client context already loaded."""
    from distributed.security import Security
    if target.tls_ca_file:
        sec = Security(tls_ca_file=target.tls_ca_file, tls_client_cert=target.tls_cert,
                       tls_client_key=target.tls_key, require_encryption=True)
    else:
        sec = Security()  # Dask's configuration (distributed.comm.tls.*, require-encryption)
        tls = sec.get_tls_config_for_role("client")
        if str(target.address).startswith("tls://") and not (tls["ca_file"] and tls["cert"]):
            raise SchedulerError(f"{target.address} is a TLS address: give --tls-ca-file and --tls-cert "
                                 "(or Dask's distributed.comm.tls.ca-file and distributed.comm.tls.client.cert)")
    try:
        sec.get_connection_args("client")   # reads the PEM files: a bad one fails here, in one line
    except (OSError, ValueError) as exc:
        raise SchedulerError(f"cannot use the TLS files: {_one_line(exc)}") from None
    return sec


def _probe(address: str, security, timeout: float) -> None:
    """Connect to ``address``, do Dask's handshake and ask for its identity, all within
    ``timeout`` seconds, in an event loop of a thread of its own; SchedulerError if that fails
    or the server is not a Dask scheduler."""
    from distributed.comm import connect as comm_connect
    args = security.get_connection_args("client")

    async def identity():
        comm = await comm_connect(address, timeout=timeout, deserialize=False, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["reply"] = asyncio.run(asyncio.wait_for(identity(), timeout))
        except BaseException as exc:  # noqa: BLE001 - reported below as one line
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="densehmm-dask-probe", daemon=True)
    thread.start()
    thread.join(timeout + 2.0)   # wait_for ends it at the deadline; the margin is for its clean-up
    where = f"cannot connect to the Dask scheduler at {address}"
    if thread.is_alive():
        raise SchedulerError(f"{where}: no answer within {timeout:g} s")
    if "error" in outcome:
        exc = outcome["error"]
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            raise SchedulerError(f"{where}: no answer within {timeout:g} s")
        raise SchedulerError(f"{where}: {_one_line(exc)}")
    reply = outcome.get("reply")
    kind = reply.get("type") if isinstance(reply, dict) else None
    if kind != "Scheduler":
        raise SchedulerError(f"{where}: it answers as {kind or 'something else'}, not as a Dask scheduler")


def _client(distributed, address, timeout: float, security):
    """``distributed.Client(address)``; if it fails to start it is closed at once (a Client whose
    ``__init__`` raised would otherwise stall the interpreter's exit in ``__del__``)."""
    client = distributed.Client.__new__(distributed.Client)
    try:
        client.__init__(address, timeout=f"{timeout}s", security=security, set_as_default=False)
    except BaseException:
        try:
            client.close(timeout=2)
        except Exception:  # noqa: BLE001 - the start failed; that error is the one reported
            pass
        raise
    return client


def _client_within(distributed, address, timeout: float, security):
    """:func:`_client` in a thread of its own, waited for ``timeout`` (+ 2 s for its clean-up): Dask's
    ``Client`` waits for the scheduler's handshake without a deadline, so a server that answered the
    probe and then stops answering would hold the caller forever.  Past the deadline the thread is
    left behind (a daemon, holding one half-open connection) and SchedulerError is raised."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["client"] = _client(distributed, address, timeout, security)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="densehmm-dask-client", daemon=True)
    thread.start()
    thread.join(timeout + 2.0)
    if thread.is_alive():
        raise SchedulerError(f"cannot connect to the Dask scheduler at {address}: no answer within {timeout:g} s "
                             "(it answered a first probe, then stopped answering)")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["client"]


def _start_method() -> str:
    """How the local cluster's nannies start their workers: ``forkserver`` where the platform has it
    (a clean server process forks each worker: the cluster starts in about half the time of
    ``spawn`` and closes at once, docs/PERFORMANCE.md), else Dask's ``spawn``.  Never ``fork``: the
    caller has threads (Dask's event loop) and may hold TensorFlow."""
    import multiprocessing
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


#: The module the forkserver imports to hold TensorFlow (``densehmm_core/experiments/_preload_tf.py``).
PRELOAD_TF = "densehmm_core.experiments._preload_tf"
# What Dask's nannies set in this process's environment before they start the first worker (and so
# the forkserver): distributed.yaml's ``distributed.nanny.pre-spawn-environ`` (Dask 2026.8), which a
# user's Dask configuration may change and this process's environment overrides, as in the nanny.
_PRE_SPAWN_DEFAULTS = {"MALLOC_TRIM_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                       "OPENBLAS_NUM_THREADS": "1"}
_ENV_LOCK = threading.Lock()   # this module's own changes of os.environ, one at a time


def _pre_spawn_environ() -> Dict[str, str]:
    """The environment a nanny would give the forkserver (without importing Distributed)."""
    import dask.config
    cfg = {**_PRE_SPAWN_DEFAULTS, **(dask.config.get("distributed.nanny.pre-spawn-environ", default=None) or {})}
    return {k: os.environ.get(k, str(v)) for k, v in cfg.items() if v is not None}


def start_forkserver(env: Optional[Dict[str, str]] = None, preload_tf: bool = False) -> bool:
    """Start the forkserver that forks a local cluster's workers now, and return at once; it
    imports Dask, numpy and, with ``preload_tf``, TensorFlow (:data:`PRELOAD_TF`) in the
    background, while this process goes on setting up (importing Dask, making the credentials,
    starting the scheduler), and the workers are forked with them: TensorFlow is imported once
    per sweep instead of once per worker.

    It is multiprocessing's forkserver, one per process: when it already runs (an earlier
    local cluster of this process) it is reused as it is, with what it imported.  Its
    environment is the one Dask's nannies would have given it (this process's, with Dask's
    ``pre-spawn-environ``: one BLAS/OpenMP thread, so it starts no thread pool and forks from a
    single thread) and ``TF_CPP_MIN_LOG_LEVEL`` of ``env``; the rest of ``env`` reaches the
    workers through their nannies, as before.
    Returns False where the workers are not started by a forkserver (no forkserver on this
    platform) or Dask is not installed.
    """
    import importlib.util
    from multiprocessing import forkserver
    if _start_method() != "forkserver" or importlib.util.find_spec("distributed") is None:
        return False
    modules = [name for name in ("distributed", "numpy") if importlib.util.find_spec(name) is not None]
    if preload_tf and importlib.util.find_spec("tensorflow") is not None:
        modules.append(PRELOAD_TF)
    forkserver.set_forkserver_preload(modules)   # no effect on a forkserver already running
    values = _pre_spawn_environ()
    if env and "TF_CPP_MIN_LOG_LEVEL" in env:
        values["TF_CPP_MIN_LOG_LEVEL"] = env["TF_CPP_MIN_LOG_LEVEL"]
    with _ENV_LOCK, EnvPatch(values):   # inherited by the forkserver (and the resource tracker) as they start
        forkserver.ensure_running()
    return True


def _local_cluster(distributed, jobs: int, env: Optional[Dict[str, str]], dashboard: bool,
                   preload_tf: bool = False):
    """A LocalCluster private to this process (module docstring); ``(cluster, security)``."""
    import dask
    from distributed.security import Security
    start_forkserver(env, preload_tf)   # if not started yet: its imports overlap what follows
    try:
        security = Security.temporary()
    except ImportError as exc:
        raise DaskMissingError("the local Dask cluster's TLS needs 'cryptography': "
                               "pip install 'densehmm-studio[dask]'") from exc
    routes = [r for r in dask.config.get("distributed.scheduler.http.routes") if r != "distributed.http.proxy"]
    http = f"{LOOPBACK}:0"   # any free port of the loopback interface, never a clash
    with dask.config.set({"distributed.scheduler.http.routes": routes if dashboard else [],
                          "distributed.worker.http.routes": [],   # the nannies pass it on to the workers
                          "distributed.worker.multiprocessing-method": _start_method()}):
        cluster = distributed.LocalCluster(
            n_workers=max(1, int(jobs)), threads_per_worker=1, processes=True, host=LOOPBACK, security=security,
            dashboard_address=http if dashboard else None,
            scheduler_kwargs=None if dashboard else {"dashboard_address": http},   # its HTTP server, no routes
            silence_logs=logging.ERROR, env=dict(env or {}))
    return cluster, security


def connect(jobs: int, scheduler: Union[None, str, DaskTarget] = None, env: Optional[Dict[str, str]] = None,
            timeout: Optional[float] = None, preload_tf: bool = False):
    """``(client, cluster)``: a client of the target's scheduler, or of a new local cluster
    (``cluster`` is then not None and must be closed by the caller).

    ``timeout``: seconds to wait for a scheduler (default: ``$DENSEHMM_DASK_TIMEOUT`` or 10);
    raises :class:`SchedulerError` (one line) within about that time if it cannot be used.
    ``preload_tf``: the tasks use TensorFlow: a local cluster's workers are forked with it
    (:func:`start_forkserver`).
    """
    target = DaskTarget.of(scheduler).check()
    distributed = _import_distributed()
    timeout = _timeout(timeout)
    if target.address is not None:
        security = _security(target)
        _probe(target.address, security, timeout)
        try:
            return _client_within(distributed, target.address, timeout, security), None
        except SchedulerError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure to connect is one user-facing line
            raise SchedulerError(f"cannot connect to the Dask scheduler at {target.address}: "
                                 f"{_one_line(exc)}") from None
    cluster, security = _local_cluster(distributed, jobs, env, target.dashboard, preload_tf)
    try:
        client = distributed.Client(cluster, security=security, set_as_default=False)
    except BaseException:
        cluster.close()
        raise
    return client, cluster


def dashboard_note(client) -> str:
    """The line that says where a local cluster's dashboard is (and what it needs)."""
    import importlib.util
    link = client.dashboard_link
    if importlib.util.find_spec("bokeh") is None:
        return f"dask: dashboard at {link} needs the bokeh package (pip install 'bokeh>=3.1')"
    return f"dask: dashboard at {link} (this machine only)"


def run_on_dask(todo: Sequence, finish: Callable, *, call: Callable, jobs: int,
                scheduler: Union[None, str, DaskTarget] = None,
                shared=None, out: Callable[[str], None] = print,
                env: Optional[Dict[str, str]] = None, preload_tf: bool = False) -> None:
    """Run ``todo`` (runner ``Task`` objects) on a Dask cluster, calling
    ``finish(task, rows, seconds, error_or_None)`` in this process as each one ends.
    ``call(func, kwargs, shared)`` runs one task on a worker (the runner's ``call_task``,
    passed in so that this module does not import the runner back).  ``scheduler``: a
    :class:`DaskTarget`, an address or None (a local cluster).

    ``preload_tf``: the tasks use TensorFlow; a local cluster's forkserver starts importing it
    before anything else here (:func:`start_forkserver`).

    Ctrl-C cancels the futures still pending (``KeyboardInterrupt`` is re-raised
    after the cluster is closed); the rows of finished tasks are already saved.
    """
    target = DaskTarget.of(scheduler)
    if target.address is None:
        start_forkserver(env, preload_tf)   # first: it imports while this process imports Dask
    distributed = _import_distributed()
    client, cluster = connect(jobs, target, env, preload_tf=preload_tf)
    futures: Dict = {}
    try:
        where = target.describe(jobs)
        out(f"dask: {len(todo)} tasks on {where}" + ("" if target.address else f" ({client.scheduler.address})"))
        if target.dashboard:
            out(dashboard_note(client))
        shared_future = None
        if shared is not None:
            # one object, sent once to every worker; tasks get it by reference
            try:
                shared_future = client.scatter([shared], broadcast=True, hash=False)[0]
            except TimeoutError as exc:   # e.g. a scheduler without workers
                raise SchedulerError(f"cannot send the data to the workers of {where}: {_one_line(exc)} within "
                                     f"{_timeout(None):g} s (start workers, or raise DENSEHMM_DASK_TIMEOUT)") from None
        run_id = uuid.uuid4().hex[:8]
        for i, t in enumerate(todo):
            fut = client.submit(call, t.func, t.kwargs, shared_future,
                                key=f"densehmm-{run_id}-{i}", pure=False)
            futures[fut] = t
        for fut in distributed.as_completed(list(futures), loop=client.loop):
            t = futures.pop(fut)
            try:
                rows, secs, err = fut.result()
            except Exception:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths
                rows, secs, err = [], 0.0, traceback.format_exc()
            finish(t, rows, secs, err)
    except KeyboardInterrupt:
        if futures:
            client.cancel(list(futures))
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
