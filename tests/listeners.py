"""Test helpers for network exposure (issue 25): the listening sockets of a process tree, a
stranger who tries to run code through a Dask scheduler, a TLS client without a certificate."""
from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")


def _tree(pid: int):
    """``pid`` and its descendants (from /proc)."""
    children: dict = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def _hex_ip(text: str) -> str:
    raw = bytes.fromhex(text)
    # the kernel prints the address as 32-bit words in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))


def _proc_listeners(pid: int):
    """As :func:`listeners`, from /proc/net/{tcp,tcp6,udp,udp6} and /proc/PID/fd (no psutil)."""
    sockets = {}
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{name}", encoding="utf-8") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            local, state, inode = f[1], f[3], f[9]
            remote_port = int(f[2].rsplit(":", 1)[1], 16)
            if (name.startswith("tcp") and state == "0A") or (name.startswith("udp") and remote_port == 0):
                ip, port = local.rsplit(":", 1)
                sockets[inode] = (_hex_ip(ip), int(port, 16))
    found = []
    for p in _tree(pid):
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{p}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in sockets:
                found.append((p, *sockets[link[8:-1]]))
    return found


def listeners(pid: int):
    """``(pid, ip, port)`` of every listening TCP socket and unconnected UDP socket of the
    process ``pid`` and its descendants (psutil when installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        return _proc_listeners(pid)
    found = []
    root = psutil.Process(pid)
    for proc in [root] + root.children(recursive=True):
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN or (c.type == socket.SOCK_DGRAM and not c.raddr):
                found.append((proc.pid, c.laddr.ip, c.laddr.port))
    return found


def assert_loopback_only(found):
    assert found, "no listener found: the check would prove nothing"
    for pid, ip, port in found:
        assert ipaddress.ip_address(ip).is_loopback, f"process {pid} listens on {ip}:{port}"


ATTACK = r"""
import os, sys, time
import distributed
from distributed.security import Security
address, mode, marker = sys.argv[1:4]
security = {"plain": None, "other-ca": Security.temporary()}[mode]
if mode == "plain":
    address = address.replace("tls://", "tcp://")
def touch():
    open(marker, "w").close()
    return os.getpid()
t0 = time.monotonic()
client = distributed.Client.__new__(distributed.Client)
try:
    client.__init__(address, timeout="5s", security=security, set_as_default=False)
    client.run_on_scheduler(touch)
    client.submit(touch, pure=False).result(timeout=10)
    print("RAN", flush=True)
except Exception as exc:
    print(f"REFUSED {time.monotonic() - t0:.2f} {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
os._exit(0)
"""


def attack(address: str, mode: str, marker: Path):
    """A stranger on this machine tries to run code through ``address``; its verdict line."""
    r = subprocess.run([sys.executable, "-c", ATTACK, address, mode, str(marker)], capture_output=True, text=True,
                       timeout=60, env=ENV)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("RAN", "REFUSED"))]
    assert lines, r.stderr[-2000:]
    return lines[-1]


def tls_handshake_without_certificate(port: int) -> str:
    """A TLS client that trusts any server but presents no certificate: how the server answers."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        try:
            with ctx.wrap_socket(raw) as tls:
                tls.sendall(b"\0" * 64)
                data = tls.recv(1024)   # TLS 1.3: the server's refusal arrives here
                return "closed" if not data else f"answered {data!r}"
        except (ssl.SSLError, ConnectionError) as exc:
            return f"refused: {type(exc).__name__}"
