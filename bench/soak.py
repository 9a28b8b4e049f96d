#!/usr/bin/env python3
"""bench/soak.py: mixed load against a running `rein serve`, for bench/soak.sh.

    soak.py BASE_URL SERVER_PID DURATION_S [INTERVAL_S]

Runs, all at once, until DURATION_S has passed (every loop is bounded by that time):
  invoke     4 threads: POST /skills/echo/invoke on kept-alive connections
  chat       2 threads: POST /agent/chat (the scripted model calls echo, then answers)
  sse        1 thread:  the same with Accept: text/event-stream, read to the result event
  mcp        1 thread:  POST /mcp tools/call echo (after initialize)
  regex      1 thread:  log_transform with (a+)+$ on 1,100 lines (a PCRE2 limit: an error)
  malformed  1 thread:  garbage, bad Content-Length, invented methods, NUL in arguments
  slow       1 thread:  keeps 40 slowloris connections (a header line every 2 s) open
and every INTERVAL_S (default 30) prints a row: requests and errors per kind in the interval,
p99 latency of invoke and chat, the worst invoke latency (a worker starved by slow work would
show here), the server's RSS and open descriptors. "Errors" are answers that are not what the
request should get (a regex bomb must be answered 200 with ok false and invalid_arguments; a
malformed request must be 4xx; a slow client must be cut by the server, not by us).
"""
import http.client
import json
import os
import socket
import sys
import threading
import time

base, server_pid, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
interval = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
host, port = base.split("//")[1].split(":")
port = int(port.rstrip("/"))
end = time.monotonic() + duration
lock = threading.Lock()
stats = {}


def record(kind, ok, ms=None):
    with lock:
        s = stats.setdefault(kind, {"n": 0, "err": 0, "lat": []})
        s["n"] += 1
        if not ok:
            s["err"] += 1
        if ms is not None:
            s["lat"].append(ms)


def conn():
    return http.client.HTTPConnection(host, port, timeout=30)


def post_json(c, path, body, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=json.dumps(body), headers=h)
    r = c.getresponse()
    return r.status, r.read(), r


def loop(kind, fn):
    c = conn()
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            ok = fn(c)
        except Exception:
            ok = False
            c.close()
            c = conn()
        record(kind, ok, (time.monotonic() - t0) * 1000)


def invoke(c):
    st, body, _ = post_json(c, "/skills/echo/invoke", {"arguments": {"text": "hello"}})
    return st == 200 and b'"ok":true' in body


chat_n = [0]


def chat(c):
    with lock:
        chat_n[0] += 1
        n = chat_n[0]
    st, body, _ = post_json(c, "/agent/chat", {"message": "echo hello", "conversation_id": "soak-%d" % (n % 200)})
    if st == 409:  # two threads on one conversation: the lock says so, as it should
        return True
    return st == 200 and json.loads(body).get("success") is True


def sse(c):
    with lock:
        chat_n[0] += 1
        n = chat_n[0]
    st, body, _ = post_json(c, "/agent/chat", {"message": "echo hello", "conversation_id": "soak-sse-%d" % (n % 50)},
                            {"Accept": "text/event-stream"})
    return st == 409 or (st == 200 and b"event: result" in body)


mcp_session = {}


def mcp(c):
    h = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if "id" not in mcp_session:
        st, body, r = post_json(c, "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "soak", "version": "1"}}}, h)
        sid = r.getheader("Mcp-Session-Id")
        if st != 200:
            return False
        mcp_session["id"] = sid
        if sid:
            h["Mcp-Session-Id"] = sid
        post_json(c, "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        return True
    if mcp_session["id"]:
        h["Mcp-Session-Id"] = mcp_session["id"]
    st, body, _ = post_json(c, "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                        "params": {"name": "echo", "arguments": {"text": "hi"}}}, h)
    return st == 200 and b"hi" in body


BOMB = "2024-05-01 12:00:00 INFO aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n" * 1100


def regex(c):
    st, body, _ = post_json(c, "/skills/log_transform/invoke",
                            {"arguments": {"text": BOMB, "format": "plain", "match": "(a+)+$"}, "timeout_ms": 2000})
    if st != 200:
        return False
    d = json.loads(body)
    return d.get("ok") is False and d["error"]["code"] == "invalid_arguments"


MALFORMED = [
    b"GARBAGE\r\n\r\n",
    b"POST /skills/echo/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12abc\r\n\r\n{}",
    b"XMETHOD%d /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
    b"POST /skills/file_search/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 67\r\n\r\n"
    b'{"arguments": {"query": "x", "root_dir": "a.txt\\u0000/../.."}}     ',
    b"POST /skills/echo/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{bad}",
]
mal_i = [0]


def malformed(_c):
    mal_i[0] += 1
    req = MALFORMED[mal_i[0] % len(MALFORMED)]
    if b"%d" in req:
        req = req % (mal_i[0] % 1000)
    # A malformed Content-Length is answered and closed: read to the close, so an answer sent
    # twice (libmicrohttpd 0.9.75 stacked two header blocks) counts as an error.
    to_close = b"12abc" in req
    s = socket.create_connection((host, port), timeout=10)
    try:
        s.sendall(req)
        data = b""
        while to_close or b"\r\n\r\n" not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    finally:
        s.close()
    if to_close and data.count(b"HTTP/1.") != 1:
        return False
    line = data.split(b"\r\n", 1)[0]
    parts = line.split()
    if len(parts) < 2:
        return req.startswith(b"GARBAGE")  # not HTTP: libmicrohttpd just closes
    code = int(parts[1])
    # An invented method on a GET route is 405; the NUL case is 200 with invalid_arguments.
    return 400 <= code < 500 or (code == 200 and b"file_search" in req)


def slow_clients():
    held = []
    cut = 0
    while time.monotonic() < end:
        while len(held) < 40:
            try:
                s = socket.create_connection((host, port), timeout=5)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                held.append(s)
            except OSError:
                break
        time.sleep(2)
        alive = []
        for s in held:
            try:
                s.sendall(b"X-Slow: 1\r\n")
                alive.append(s)
            except OSError:
                cut += 1
                record("slow", True)
                s.close()
        held = alive
    for s in held:
        s.close()


def rss_fds():
    try:
        with open("/proc/%d/status" % server_pid) as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        fds = len(os.listdir("/proc/%d/fd" % server_pid))
        return rss // 1024, fds
    except (OSError, StopIteration):
        return -1, -1


def p99(lat):
    if not lat:
        return 0.0
    lat = sorted(lat)
    return lat[min(len(lat) - 1, int(len(lat) * 0.99))]


threads = [threading.Thread(target=loop, args=("invoke", invoke)) for _ in range(4)]
threads += [threading.Thread(target=loop, args=("chat", chat)) for _ in range(2)]
threads += [threading.Thread(target=loop, args=("sse", sse)),
            threading.Thread(target=loop, args=("mcp", mcp)),
            threading.Thread(target=loop, args=("regex", regex)),
            threading.Thread(target=loop, args=("malformed", malformed)),
            threading.Thread(target=slow_clients)]
for t in threads:
    t.daemon = True
    t.start()

kinds = ["invoke", "chat", "sse", "mcp", "regex", "malformed", "slow"]
print("%6s %s %9s %9s %9s %7s %5s" % ("t_s", " ".join("%14s" % k for k in kinds), "inv_p99", "chat_p99",
                                       "inv_max", "rss_MB", "fds"))
start = time.monotonic()
total = {}
while time.monotonic() < end:
    time.sleep(max(0.0, min(interval, end - time.monotonic())))
    with lock:
        snap = {k: stats.pop(k, {"n": 0, "err": 0, "lat": []}) for k in kinds}
    for k in kinds:
        t = total.setdefault(k, [0, 0])
        t[0] += snap[k]["n"]
        t[1] += snap[k]["err"]
    rss, fds = rss_fds()
    print("%6.0f %s %9.1f %9.1f %9.1f %7d %5d" % (
        time.monotonic() - start,
        " ".join("%14s" % ("%d/%d" % (snap[k]["n"], snap[k]["err"])) for k in kinds),
        p99(snap["invoke"]["lat"]), p99(snap["chat"]["lat"]),
        max(snap["invoke"]["lat"] or [0]), rss, fds), flush=True)
print("total (requests/errors): " + ", ".join("%s %d/%d" % (k, total[k][0], total[k][1]) for k in kinds))
sys.exit(0)
