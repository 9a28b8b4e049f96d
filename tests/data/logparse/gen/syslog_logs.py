#!/usr/bin/env python3
"""Writes samples of syslog lines as util-linux logger(1) sends them, RFC 5424 and RFC 3164,
received on a Unix datagram socket (what rsyslog or syslog-ng read before writing them out).

usage: syslog_logs.py OUTDIR   (writes OUTDIR/syslog_5424/input and OUTDIR/syslog_3164/input)
"""
import os
import socket
import subprocess
import sys
import tempfile

MESSAGES = [
    ("user.err", "backup", "disk full on /var"),
    ("daemon.warning", "ntpd", "time jumped by 2.5s"),
    ("auth.info", "sshd", "Accepted publickey for deploy from 10.0.0.7 port 52100"),
    ("kern.crit", "kernel", "Out of memory: Killed process 4242 (java)"),
    ("local0.debug", "app", "cache refresh took 12ms"),
    ("mail.notice", "postfix", "connect from unknown[203.0.113.9]"),
    ("user.emerg", "watchdog", "system is going down"),
]


def capture(mode):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        lines = []
        for prio, tag, msg in MESSAGES:
            subprocess.run(["logger", "--socket", path, "--socket-errors=on", mode, "-p", prio,
                            "-t", tag, "-i", msg], check=True)
            lines.append(sock.recv(65536).decode().rstrip("\n"))
        sock.close()
        return lines


def main():
    out = sys.argv[1]
    for case, mode in (("syslog_5424", "--rfc5424"), ("syslog_3164", "--rfc3164")):
        os.makedirs(os.path.join(out, case), exist_ok=True)
        with open(os.path.join(out, case, "input"), "w") as f:
            f.write("\n".join(capture(mode)) + "\n")


if __name__ == "__main__":
    main()
