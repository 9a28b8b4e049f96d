"""Asking the MCP client from a process skill (rein's asking protocol, version 1; docs/skills.md).

A skill whose runner lists "client_requests" reads its call document as the first line of stdin,
writes a JSON-RPC request line on stderr, and reads rein's response line from stdin.
"""
import json
import sys


def read_call():
    call = json.loads(sys.stdin.readline())
    if call.get("client_requests") != 1:
        sys.exit("this skill needs rein's asking protocol, version 1")
    return call


def ask(method, params, request_id=1):
    request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    sys.stderr.write(json.dumps(request) + "\n")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.exit("rein closed stdin before answering")
    response = json.loads(line)
    if response.get("id") != request_id:
        sys.exit("the answer is for another request: %r" % (response.get("id"),))
    return response


def ask_batch(requests):
    """Asks several things at once: [(id, method, params), ...] -> {id: response}. A stateless
    (2026-07-28) client gets them all in one input-required result."""
    batch = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, m, p in requests]
    sys.stderr.write(json.dumps(batch) + "\n")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.exit("rein closed stdin before answering")
    return {r.get("id"): r for r in json.loads(line)}


def reply_text(text):
    print(json.dumps({"content": [{"type": "text", "text": text}]}))


def fail(response):
    error = response["error"]
    print(json.dumps({"ok": False, "error": {
        "code": "execution_failed",
        "message": "the client could not be asked (%d): %s" % (error["code"], error["message"])}}))
