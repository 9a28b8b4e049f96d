"""The benchmark's peer: the same call pipeline in Python with pydantic, as the seed's teams
built it (docs/DESIGN.md [skill-host]): a model per tool, the name looked up in a dict (with the
case-insensitive fallback of docs/DESIGN.md [pipeline]), the argument text parsed and validated,
a ledger entry written pending and updated to success, the tool run, and a result dict in the
normalized shape. Prints calls per second (a batch timed as a whole, in CPU time, so other
programs on the machine do not count) and the median wall time of one call (each call timed).

Each figure is the best of ROUNDS rounds, as for rein.

    /usr/bin/python3 bench/pipeline_peer.py [CALLS] [ROUNDS]
"""
import json
import statistics
import sys
import time
from datetime import datetime, timezone
from typing import List, Literal, Optional

from pydantic import BaseModel, Extra, ValidationError


class EchoArgs(BaseModel, extra=Extra.forbid):
    text: str


class FileSearchArgs(BaseModel, extra=Extra.forbid):
    query: str
    root_dir: Optional[str] = None
    limit: int = 20
    regex: bool = False
    glob: Optional[str] = None


class CalculatorArgs(BaseModel, extra=Extra.forbid):
    op: Optional[Literal["mean", "sum", "min", "max", "median", "stdev", "count", "product"]] = None
    values: Optional[List[float]] = None
    expression: Optional[str] = None


class LogTransformArgs(BaseModel, extra=Extra.forbid):
    path: Optional[str] = None
    text: Optional[str] = None
    format: str = "auto"
    level: Optional[str] = None
    limit: int = 100


TOOLS = {
    "echo": (EchoArgs, lambda a: a.text),
    "file_search": (FileSearchArgs, lambda a: {"matches": []}),
    "calculator": (CalculatorArgs, lambda a: {"result": 0}),
    "log_transform": (LogTransformArgs, lambda a: {"records": []}),
}
LOWER = {name.lower(): name for name in TOOLS}


def now_iso():
    return datetime.now(timezone.utc).isoformat()


def invalid(tool, error, received, expected):
    return {"tool": tool, "error": "Invalid arguments: " + error, "receivedArgs": received,
            "expected": expected, "hint": "Fix the arguments and call %s again." % tool}


def call(name, args_text, call_id, trace_id, ledger):
    start = time.perf_counter_ns()
    tool = name if name in TOOLS else LOWER.get(name.lower())
    if tool is None:
        return {"ok": False, "tool": name, "call_id": call_id, "trace_id": trace_id,
                "error": {"code": "unknown_tool", "message": name, "details": []}}
    model, run = TOOLS[tool]
    try:
        args = model.parse_obj(json.loads(args_text) if args_text.strip() else {})
    except (ValueError, ValidationError) as e:
        return invalid(tool, str(e), args_text, model.schema())
    entry = {"call_id": call_id, "tool": tool, "args": args.dict(), "status": "pending",
             "result": None, "call_time": now_iso(), "response_time": None}
    ledger.append(entry)
    output = run(args)
    entry.update(status="success", result=output, response_time=now_iso())
    return {"ok": True, "tool": tool, "call_id": call_id, "trace_id": trace_id,
            "output": output,
            "meta": {"latency_ms": (time.perf_counter_ns() - start) // 1000000}}


def measure(n, turn, args_text, trace):
    ledger = []
    t0 = time.process_time_ns()
    for i in range(n):
        if i % turn == 0:
            ledger = []
        res = call("echo", args_text, "call_%d" % i, trace, ledger)
    total = time.process_time_ns() - t0
    assert res["ok"] and res["output"] == "hello world", res
    lat = []
    for i in range(n):
        if i % turn == 0:
            ledger = []
        s = time.perf_counter_ns()
        call("echo", args_text, "call_%d" % i, trace, ledger)
        lat.append(time.perf_counter_ns() - s)
    lat.sort()
    return n * 1e9 / total, statistics.median_low(lat), lat[n * 99 // 100]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    turn = 1000
    args_text = '{"text": "hello world"}'
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    ledger = []
    for i in range(turn):
        call("echo", args_text, "call_%d" % i, trace, ledger)
    best_rate, best_median, best_p99 = 0.0, None, None
    for _ in range(rounds):
        rate, median, p99 = measure(n, turn, args_text, trace)
        best_rate = max(best_rate, rate)
        if best_median is None or median < best_median:
            best_median, best_p99 = median, p99
    print("calls=%d" % n)
    print("calls_per_sec=%.0f" % best_rate)
    print("median_ns=%d" % best_median)
    print("p99_ns=%d" % best_p99)


if __name__ == "__main__":
    main()
