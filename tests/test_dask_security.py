"""Dask's network exposure (issue 25) and scheduler hangs (issue 27 item 6).

* The local cluster of ``sweep --executor dask`` (and of the app's "local Dask" target) listens
  on 127.0.0.1 only (read from the sockets of the sweep's processes while it runs) and a client
  without its temporary TLS credentials cannot run a task (refused or a TLS failure within
  seconds); its HTTP servers serve nothing unless ``--dashboard``.
* A named cluster with TLS (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``) works, and
  the TLS options are checked up front (one line, exit 2).
* A fake scheduler that accepts TCP and never answers (or does Dask's handshake and then never
  answers) ends the connection within the timeout; malformed addresses print one line and exit
  at once (no 20 s stall, no ``Client.__del__`` traceback).
"""
from __future__ import annotations

import asyncio
import csv
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from distributed.security import Security  # noqa: E402

from densehmm_core.experiments.dask_executor import (DaskTarget, SchedulerError, check_address,  # noqa: E402
                                                     connect)
from listeners import assert_loopback_only, attack, listeners, tls_handshake_without_certificate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FASTA = REPO / "tests" / "fixtures" / "data" / "pdb_seqres_like.fasta"
ENV = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")


def test_the_socket_check_sees_every_listener_and_catches_a_wildcard_one():
    import listeners as sockets_of
    opened = [socket.socket(), socket.socket(socket.AF_INET6), socket.socket(type=socket.SOCK_DGRAM)]
    try:
        opened[0].bind(("0.0.0.0", 0))
        opened[1].bind(("::1", 0))
        opened[2].bind(("127.0.0.1", 0))
        for s in opened[:2]:
            s.listen()
        mine = {("0.0.0.0", opened[0].getsockname()[1]), ("::1", opened[1].getsockname()[1]),
                ("127.0.0.1", opened[2].getsockname()[1])}
        found = {(ip, port) for pid, ip, port in sockets_of._proc_listeners(os.getpid())}
        assert mine <= found
        try:
            import psutil  # noqa: F401
        except ImportError:
            pass
        else:   # the /proc reader and psutil agree
            assert sorted(sockets_of._proc_listeners(os.getpid())) == sorted(sockets_of.listeners(os.getpid()))
        with pytest.raises(AssertionError, match="listens on 0.0.0.0"):
            assert_loopback_only(sockets_of.listeners(os.getpid()))
    finally:
        for s in opened:
            s.close()


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


# ------------------------------------------------------------------ the local cluster of the CLI
def test_cli_local_cluster_listens_on_loopback_only_and_refuses_strangers(tmp_path):
    out = tmp_path / "o"
    args = [sys.executable, "-m", "densehmm_core", "sweep", str(FASTA), "--grid", "n=2,3 l=1 model=standard",
            "--repeats", "300", "--quick", "--jobs", "2", "--executor", "dask", "--dashboard", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=str(REPO),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
            if line.startswith("dask: dashboard at"):
                break
        head = [ln for ln in lines if ln.startswith("dask: ") and " tasks on " in ln]
        assert head, lines
        address = head[0].rsplit("(", 1)[1].rstrip(")")
        assert address.startswith("tls://127.0.0.1:"), address
        dashboard = lines[-1].split()[3]
        assert dashboard.startswith("http://127.0.0.1:"), lines[-1]
        # every listener of the sweep's processes (the command, its nannies, its two workers)
        deadline = time.monotonic() + 60
        found = listeners(proc.pid)
        while len({pid for pid, _, _ in found}) < 3 and time.monotonic() < deadline:
            time.sleep(0.5)
            found = listeners(proc.pid)
        assert len({pid for pid, _, _ in found}) >= 3, found     # the command and both worker processes
        assert (proc.pid, "127.0.0.1", _port(address)) in found
        assert_loopback_only(found)
        # the dashboard was asked for: it answers, on loopback
        assert urllib.request.urlopen(dashboard.replace("/status", "/health"), timeout=5).status == 200
        # strangers: no credentials (plain TCP), other credentials, a TLS client without a certificate
        marker = tmp_path / "pwned"
        for mode in ("plain", "other-ca"):
            verdict = attack(address, mode, marker)
            assert verdict.startswith("REFUSED"), verdict
            assert float(verdict.split()[1]) < 8.0, verdict   # within the client's 5 s timeout and a margin
        assert tls_handshake_without_certificate(_port(address)).startswith(("refused", "closed"))
        assert not marker.exists()
        assert proc.poll() is None, "the sweep ended before the checks were done"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert proc.returncode == 130


# ------------------------------------------------------------------ the local cluster, in process
def test_local_cluster_is_private_and_its_http_servers_serve_nothing():
    client, cluster = connect(2, DaskTarget())
    try:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2, 3], pure=False).result(timeout=30) == 6   # we can run tasks
        assert_loopback_only(listeners(os.getpid()))
        # no dashboard and no other route on the scheduler's HTTP server, nor on the workers'
        port = cluster.scheduler.http_server.port
        for path in ("/status", "/health", "/json/identity.json", "/info/main/workers.html", "/metrics"):
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
            assert info.value.code == 404, path

        def routes(dask_worker):
            import dask
            return dask.config.get("distributed.worker.http.routes"), dask_worker.http_server.address

        got = client.run(routes)
        assert len(got) == 2 and all(r == ([], "127.0.0.1") for r in got.values()), got
        # the cluster's own credentials work from another process; a stranger's do not
        sec = cluster.security
        good = Security(tls_ca_file=sec.tls_ca_file, tls_client_cert=sec.tls_client_cert,
                        tls_client_key=sec.tls_client_key, require_encryption=True)
        with distributed.Client(cluster.scheduler_address, security=good, timeout="10s",
                                set_as_default=False) as ok:
            assert ok.submit(max, [4, 9], pure=False).result(timeout=30) == 9
        assert tls_handshake_without_certificate(_port(cluster.scheduler_address)).startswith(("refused", "closed"))
    finally:
        client.close()
        cluster.close()


def test_the_dashboard_only_when_asked_and_on_loopback():
    client, cluster = connect(1, DaskTarget(dashboard=True))
    try:
        link = client.dashboard_link
        assert link.startswith("http://127.0.0.1:"), link
        assert urllib.request.urlopen(link.replace("/status", "/health"), timeout=5).status == 200
        assert_loopback_only(listeners(os.getpid()))
    finally:
        client.close()
        cluster.close()


# ------------------------------------------------------------------ a named cluster with TLS
@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A TLS cluster started by 'someone else' and its client credentials as PEM files."""
    folder = tmp_path_factory.mktemp("tls")
    sec = Security.temporary()
    files = {}
    for name, text in (("ca.pem", sec.tls_ca_file), ("cert.pem", sec.tls_client_cert),
                       ("key.pem", sec.tls_client_key)):
        (folder / name).write_text(text)
        os.chmod(folder / name, 0o600)
        files[name] = str(folder / name)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       security=sec, dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    yield cluster, files
    cluster.close()


def test_named_cluster_with_tls_files(tls_cluster, tmp_path):
    cluster, files = tls_cluster
    target = DaskTarget(cluster.scheduler_address, files["ca.pem"], files["cert.pem"], files["key.pem"])
    client, none = connect(1, target, timeout=10)
    try:
        assert none is None and client.submit(pow, 2, 10, pure=False).result(timeout=30) == 1024
    finally:
        client.close()
    # the same address without credentials: one line, at once
    with pytest.raises(SchedulerError, match="is a TLS address: give --tls-ca-file and --tls-cert"):
        connect(1, cluster.scheduler_address, timeout=3)
    # credentials of another cluster: refused within the timeout
    other = Security.temporary()
    for name, text in (("ca.pem", other.tls_ca_file), ("cert.pem", other.tls_client_cert),
                       ("key.pem", other.tls_client_key)):
        (tmp_path / name).write_text(text)
    t0 = time.monotonic()
    with pytest.raises(SchedulerError, match="cannot connect to the Dask scheduler at tls://127.0.0.1"):
        connect(1, DaskTarget(cluster.scheduler_address, str(tmp_path / "ca.pem"), str(tmp_path / "cert.pem"),
                              str(tmp_path / "key.pem")), timeout=3)
    assert time.monotonic() - t0 < 8
    # a file that is not PEM: one line naming the problem
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    with pytest.raises(SchedulerError, match="cannot use the TLS files"):
        connect(1, DaskTarget(cluster.scheduler_address, str(tmp_path / "bad.pem"), files["cert.pem"],
                              files["key.pem"]), timeout=3)


def _cli(*args, env_extra=None, timeout=300):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "densehmm_core", *args], capture_output=True, text=True,
                       env=dict(ENV, **(env_extra or {})), timeout=timeout, cwd=str(REPO))
    return r, time.monotonic() - t0


def test_cli_sweep_on_a_tls_cluster(tls_cluster, tmp_path):
    cluster, files = tls_cluster
    r, _ = _cli("sweep", str(FASTA), "--grid", "n=2,3 l=1 model=standard", "--repeats", "2", "--quick",
                "--out", str(tmp_path / "o"), "--executor", "dask", "--scheduler", cluster.scheduler_address,
                "--tls-ca-file", files["ca.pem"], "--tls-cert", files["cert.pem"], "--tls-key", files["key.pem"])
    assert r.returncode == 0, r.stderr
    assert f"tasks on {cluster.scheduler_address}" in r.stdout
    with open(tmp_path / "o" / "sweep_runs.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and all(row["status"] == "ok" for row in rows)


def _one_line_exit_2(r):
    err = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("note: ")]  # notes: the data's
    assert r.returncode == 2 and len(err) == 1 and err[0].startswith("densehmm sweep: error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    return err[0]


def test_cli_dask_options_are_checked_up_front(tmp_path):
    common = ["sweep", str(FASTA), "--grid", "n=2 l=1 model=standard", "--out", str(tmp_path / "o")]
    pem = tmp_path / "x.pem"
    pem.write_text("x")
    cases = [
        (["--tls-cert", str(pem)], "--tls-cert needs --executor dask"),
        (["--dashboard"], "--dashboard needs --executor dask"),
        (["--executor", "dask", "--tls-ca-file", str(pem), "--tls-cert", str(pem)],
         "--tls-ca-file is for a named cluster"),
        (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--tls-ca-file", str(pem), "--tls-cert",
          str(pem)], "--tls-ca-file needs a tls:// scheduler address"),
        (["--executor", "dask", "--scheduler", "tls://127.0.0.1:8786", "--tls-cert", str(pem)],
         "missing --tls-ca-file"),
        (["--executor", "dask", "--scheduler", "tls://127.0.0.1:8786", "--tls-ca-file", str(tmp_path / "no.pem"),
          "--tls-cert", str(pem)], "--tls-ca-file: file not found"),
        (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--dashboard"],
         "--dashboard is for the local cluster"),
    ]
    for extra, why in cases:
        r, _ = _cli(*common, *extra)
        assert why in _one_line_exit_2(r), (extra, r.stderr)
    assert not (tmp_path / "o").exists()   # refused before anything was written


# ------------------------------------------------------------------ scheduler hangs (issue 27 item 6)
@pytest.mark.parametrize("address", ["foo", "tcp://", "tcp://host:notaport", "http://host:8786", "tcp://[::1",
                                     "tcp://host:0", "tcp://host:65536", "tcp://a b:1", ""])
def test_malformed_addresses_are_one_line(address):
    with pytest.raises(SchedulerError, match="invalid Dask scheduler address"):
        check_address(address)


def test_well_formed_addresses():
    assert check_address("head:8786") == "tcp://head:8786"
    assert check_address(" TLS://10.0.0.5:8786 ") == "tls://10.0.0.5:8786"
    assert check_address("tcp://[::1]:8786") == "tcp://[::1]:8786"


def test_cli_malformed_address_exits_at_once_without_a_traceback(tmp_path):
    # the command's own start (Python, numpy, the data) is the only wait: Dask's Client used to
    # stall 20 s at exit and print a Client.__del__ traceback
    for address in ("tcp://host:notaport", "foo"):
        r, seconds = _cli("sweep", str(FASTA), "--grid", "n=2 l=1 model=standard", "--out", str(tmp_path / "o"),
                          "--executor", "dask", "--scheduler", address)
        assert "invalid Dask scheduler address" in _one_line_exit_2(r)
        assert seconds < 15, seconds


class SilentServer:
    """Accepts TCP connections and never sends a byte (a port that is not a Dask scheduler)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self):
        self.sock.close()
        for c in self.accepted:
            c.close()


class HandshakeThenSilence:
    """Does Dask's comm handshake, then never answers a request."""

    def __init__(self):
        self.port = None
        ready = threading.Event()

        async def main():
            from distributed.comm import listen

            async def handler(comm):
                await asyncio.sleep(3600)

            self.listener = listen("tcp://127.0.0.1:0", handler)
            await self.listener.start()
            self.port = int(self.listener.listen_address.rsplit(":", 1)[1])
            ready.set()
            await asyncio.sleep(3600)

        threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
        assert ready.wait(10)


@pytest.mark.parametrize("server", [SilentServer, HandshakeThenSilence])
def test_a_scheduler_that_never_answers_ends_within_the_timeout(server):
    fake = server()
    t0 = time.monotonic()
    with pytest.raises(SchedulerError, match="no answer within 1.5 s"):
        connect(1, f"tcp://127.0.0.1:{fake.port}", timeout=1.5)
    assert time.monotonic() - t0 < 1.5 + 2.5


class ProbeThenSilence:
    """A TCP proxy in front of a real scheduler that forwards the first connection (the probe: it
    gets a true scheduler's handshake and identity) and then accepts connections and never answers."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)
            if len(self.accepted) == 1:
                up = socket.create_connection(("127.0.0.1", self.target_port))
                self.accepted.append(up)
                threading.Thread(target=self._pipe, args=(conn, up), daemon=True).start()
                threading.Thread(target=self._pipe, args=(up, conn), daemon=True).start()

    def close(self):
        self.sock.close()
        for c in self.accepted:
            c.close()


def test_a_scheduler_that_answers_the_probe_then_stops_ends_within_the_timeout():
    """The case the probe alone does not cover (issue 27, item 6): the server answers the probe as a
    real scheduler, then never answers the Client's own handshake; connect ends within the timeout
    + 2 s (+ margin) with one line, and the CLI exits 2 without a traceback."""
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                       dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    proxy = ProbeThenSilence(int(cluster.scheduler_address.rsplit(":", 1)[1]))
    try:
        t0 = time.monotonic()
        with pytest.raises(SchedulerError, match="no answer within 1.5 s .*stopped answering"):
            connect(1, f"tcp://127.0.0.1:{proxy.port}", timeout=1.5)
        assert time.monotonic() - t0 < 1.5 + 1.5 + 2 + 2.5
        assert len(proxy.accepted) >= 3   # the probe (and its upstream) and the Client's silent connection
    finally:
        proxy.close()
        cluster.close()


def test_cli_scheduler_that_answers_the_probe_then_stops_exits_2(tmp_path):
    cluster = distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                       dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    proxy = ProbeThenSilence(int(cluster.scheduler_address.rsplit(":", 1)[1]))
    try:
        r, seconds = _cli("sweep", str(FASTA), "--grid", "n=2 l=1 model=standard", "--out", str(tmp_path / "o"),
                          "--executor", "dask", "--scheduler", f"tcp://127.0.0.1:{proxy.port}",
                          env_extra={"DENSEHMM_DASK_TIMEOUT": "2"}, timeout=120)
        line = _one_line_exit_2(r)
        assert f"cannot connect to the Dask scheduler at tcp://127.0.0.1:{proxy.port}" in line, line
        assert "stopped answering" in line
        assert seconds < 25, seconds
    finally:
        proxy.close()
        cluster.close()


def test_a_scheduler_without_workers_is_one_line_within_the_timeout(monkeypatch):
    from densehmm_core.experiments.dask_executor import run_on_dask
    from densehmm_core.experiments.runner import Task, call_task
    monkeypatch.setenv("DENSEHMM_DASK_TIMEOUT", "2")
    cluster = distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
    finished = []
    try:
        t0 = time.monotonic()
        with pytest.raises(SchedulerError, match="cannot send the data to the workers of tcp://127.0.0.1:.*within 2 s"):
            run_on_dask([Task(key={"x": 1}, func="math:sqrt", kwargs={"x": 4.0})], lambda *a: finished.append(a),
                        call=call_task, jobs=1, scheduler=cluster.scheduler_address, shared={"corpus": [1, 2]},
                        out=lambda line: None)
        assert time.monotonic() - t0 < 2 + 6 and not finished
    finally:
        cluster.close()


def test_cli_fake_scheduler_tcp_and_tls_end_within_the_timeout(tls_cluster, tmp_path):
    _, files = tls_cluster
    fake = SilentServer()
    try:
        for scheme, extra in (("tcp", []), ("tls", ["--tls-ca-file", files["ca.pem"], "--tls-cert", files["cert.pem"],
                                                    "--tls-key", files["key.pem"]])):
            r, seconds = _cli("sweep", str(FASTA), "--grid", "n=2 l=1 model=standard", "--out", str(tmp_path / scheme),
                              "--executor", "dask", "--scheduler", f"{scheme}://127.0.0.1:{fake.port}", *extra,
                              env_extra={"DENSEHMM_DASK_TIMEOUT": "2"}, timeout=120)
            line = _one_line_exit_2(r)
            assert f"cannot connect to the Dask scheduler at {scheme}://127.0.0.1:{fake.port}" in line, line
            assert seconds < 20, seconds   # the start of the command + 2 s, not 500 s
        assert len(fake.accepted) >= 2     # it really was reached both times
    finally:
        fake.close()
