"""The benchmark's peer for bench/server.sh: the seed's FastAPI skill host
(docs/DESIGN.md [skill-host]) serving POST /skills/{id}/invoke the way rein does: a registry of
skills with their manifests, the arguments checked by a pydantic model per skill (the seed's
"Pydantic validation"), the skill run by its runner, and a normalized result
{ok, tool, call_id, trace_id, output | error, meta: {latency_ms}} with the trace id from a
W3C traceparent header (else a new one) also sent as X-Trace-Id. An unknown skill is 404 in
the JSON error shape; invalid arguments are 200 with ok: false and the details, as in rein.

    /usr/bin/python3 bench/server_peer.py PORT [WORKERS]

Runs uvicorn with uvloop and httptools when they are installed (uvicorn[standard]), one
worker process unless WORKERS says otherwise, no access log.
"""
import re
import sys
import time
import uuid
from typing import Any, Dict, Optional

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Extra, ValidationError


class EchoArgs(BaseModel, extra=Extra.forbid):
    text: str


class InvokeBody(BaseModel, extra=Extra.forbid):
    arguments: Dict[str, Any]
    call_id: Optional[str] = None
    timeout_ms: Optional[int] = None
    tool: Optional[str] = None


class Skill:
    def __init__(self, manifest, model, run):
        self.manifest, self.model, self.run = manifest, model, run


REGISTRY = {
    "echo": Skill(
        {"id": "echo", "description": "Return the given text unchanged.",
         "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                        "required": ["text"], "additionalProperties": False},
         "timeout_ms": 1000, "runner": {"kind": "builtin"}},
        EchoArgs, lambda args: args.text),
}
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")

app = FastAPI()


def trace_id(request: Request) -> str:
    m = TRACEPARENT.match(request.headers.get("traceparent", ""))
    if m and m.group(1) != "0" * 32:
        return m.group(1)
    return uuid.uuid4().hex


def details(err: ValidationError):
    return [{"path": "/" + "/".join(str(p) for p in e["loc"]), "message": e["msg"]}
            for e in err.errors()]


@app.get("/skills")
async def list_skills():
    return {"skills": [s.manifest for s in REGISTRY.values()]}


@app.post("/skills/{skill_id}/invoke")
async def invoke(skill_id: str, body: InvokeBody, request: Request):
    started = time.perf_counter()
    trace = trace_id(request)
    headers = {"X-Trace-Id": trace}
    skill = REGISTRY.get(skill_id)
    if skill is None:
        return JSONResponse({"error": {"code": "not_found",
                                       "message": f'there is no skill "{skill_id}"',
                                       "available_tools": list(REGISTRY)}},
                            status_code=404, headers=headers)
    call_id = body.call_id or "call_" + uuid.uuid4().hex[:24]
    result = {"ok": True, "tool": skill_id, "call_id": call_id, "trace_id": trace}
    try:
        args = skill.model(**body.arguments)
        result["output"] = skill.run(args)
    except ValidationError as err:
        result["ok"] = False
        result["error"] = {"code": "invalid_arguments", "message": str(err),
                           "details": details(err)}
    result["meta"] = {"latency_ms": int((time.perf_counter() - started) * 1000)}
    return JSONResponse(result, headers=headers)


if __name__ == "__main__":
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    uvicorn.run("server_peer:app", host="127.0.0.1", port=int(sys.argv[1]), workers=workers,
                log_level="error", access_log=False, app_dir=sys.path[0])
