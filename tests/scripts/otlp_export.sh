#!/usr/bin/env bash
# Span export as OTLP/HTTP protobuf (docs/decisions/0029), decoded by a receiver that reads the
# official opentelemetry-proto definitions with protobufjs (tests/node/otlp_receiver.mjs), not
# by the protobuf-c code that encoded it: `rein chat` against the scripted model server, one
# turn with a repaired tool name, a call with invalid arguments, a tool no registry has and
# the re-ask after them, exported with the default protocol (http/protobuf). The span tree,
# the GenAI attributes and the content-capture switch are checked on what the receiver
# decoded; then http/json is refused by this receiver (415) and counted, not retried.
# Metrics: the same turn's GenAI client metrics and tool counters, exported at exit, decoded
# from protobuf with the official metrics_service.proto and, with http/json, checked against
# the OTLP JSON rules and read with the same .proto (the receiver refuses a body that breaks
# them).
# Exit 77 (skip) without node or without the build's protocol files (-DREIN_OTLP_PROTOBUF=OFF).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/scripts/lib.sh"
build="${REIN_BUILD_DIR:-$here/../build-test}"
bin_dir="${REIN_TEST_BIN_DIR:-$build/tests/bin}"
server="$bin_dir/rein-model-server"
rein="${REIN_BIN:-$build/rein}"
proto_dir="$build/otlp-proto"
clean_env

command -v node >/dev/null || { echo "otlp_export: node is missing"; exit 77; }
[ -d "$proto_dir/protos" ] || { echo "otlp_export: built without protobuf export"; exit 77; }
[ -x "$server" ] || fail "$server is not built"

start_model_server
node "$here/node/otlp_receiver.mjs" "$proto_dir" "$tmp/spans.jsonl" >"$tmp/recv.out" 2>"$tmp/recv.err" &
rpid=$!
trap 'kill $rpid 2>/dev/null; cleanup' EXIT
rurl=""
for _ in $(seq 1 100); do
  rurl=$(sed -n 's/^listening \(http:[^ ]*\)$/\1/p' "$tmp/recv.out")
  [ -n "$rurl" ] && break
  sleep 0.1
done
[ -n "$rurl" ] || fail "the receiver did not start: $(cat "$tmp/recv.err")"

script() { python3 -c 'import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "/__script", data=sys.argv[2].encode(), method="POST")).read()' "$url" "$1"; }
turn='[{"tool_calls":[{"id":"c1","name":"Echo","arguments":"{\"text\":\"hi\"}"},
                      {"id":"c2","name":"echo","arguments":"{\"txt\":\"hi\"}"}]},
       {"tool_calls":[{"id":"c3","name":"no_such_tool","arguments":"{}"}]},
       {"text":"It said hi."}]'
model=(--provider openai-compatible --base-url "$url/v1" --model test-model)
export OTEL_EXPORTER_OTLP_ENDPOINT="$rurl" OTEL_SERVICE_NAME=otlp-test OTEL_BSP_SCHEDULE_DELAY=50

# ---- http/protobuf (the default), contents not captured ----
script "$turn"
run 0 "$rein" chat "${model[@]}" "echo hi" --mode auto --verification off --json
check 'd["response"] == "It said hi."'
python3 - "$tmp/spans.jsonl" <<'PY' || fail "the decoded span tree is not the turn's"
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
names = sorted(s["name"] for s in spans)
assert names == ["chat test-model"] * 3 + ["execute_tool", "execute_tool echo",
                 "execute_tool echo", "invoke_agent"], names
turn = next(s for s in spans if s["name"] == "invoke_agent")
assert turn["parentSpanId"] == "" and len(turn["traceId"]) == 32 and turn["kind"] == 1, turn
assert turn["resource"]["service.name"] == "otlp-test", turn["resource"]
assert turn["attrs"]["gen_ai.operation.name"] == "invoke_agent"
assert turn["attrs"]["rein.stop_reason"] == "final_answer", turn["attrs"]
for s in spans:
    assert s["traceId"] == turn["traceId"] and s["contentType"] == "application/x-protobuf"
    assert s is turn or s["parentSpanId"] == turn["spanId"], s
    assert "gen_ai.input.messages" not in s["attrs"] and "gen_ai.tool.call.arguments" not in s["attrs"]
    assert int(s["end"]) >= int(s["start"]) > 0
    assert s["flags"] == 1, s  # Span.flags (OTLP 1.x, decision 0048): sampled
chats = [s for s in spans if s["name"] == "chat test-model"]
assert all(c["kind"] == 3 and c["attrs"]["gen_ai.request.model"] == "test-model" for c in chats)
assert sorted(c["attrs"]["gen_ai.response.finish_reasons"][0] for c in chats) == \
    ["stop", "tool_calls", "tool_calls"], [c["attrs"] for c in chats]
tools = {s["attrs"]["gen_ai.tool.call.id"]: s for s in spans if s["name"].startswith("execute_tool")}
c1, c2, c3 = tools["c1"], tools["c2"], tools["c3"]
assert c1["attrs"]["rein.tool.sent_name"] == "Echo" and c1["attrs"]["gen_ai.tool.name"] == "echo"
assert c1["events"][0]["name"] == "rein.repair" and c1["events"][0]["attrs"]["rein.repair.to"] == "echo"
assert c1["status"]["code"] == 0 and c1["attrs"]["gen_ai.tool.type"] == "function"
assert c2["attrs"]["error.type"] == "invalid_arguments" and c2["attrs"]["rein.preflight.errors"] >= 1
assert c2["status"]["code"] == 2, c2["status"]
assert c3["attrs"]["error.type"] == "unknown_tool" and "gen_ai.tool.name" not in c3["attrs"]
PY

# ---- the response's model and id and the cached input tokens on the chat span ----
: >"$tmp/spans.jsonl"
script '[{"text":"plain","model":"test-model-2026-01-01","id":"chatcmpl-r1",
          "usage":{"input_tokens":12,"output_tokens":2,"cached_tokens":5}}]'
run 0 "$rein" chat "${model[@]}" "hello" --verification off --json
python3 - "$tmp/spans.jsonl" <<'PY' || fail "the chat span does not name the response"
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
chat = next(s for s in spans if s["name"] == "chat test-model")
a = chat["attrs"]
assert a["gen_ai.request.model"] == "test-model", a
assert a["gen_ai.response.model"] == "test-model-2026-01-01", a
assert a["gen_ai.response.id"] == "chatcmpl-r1", a
assert a["gen_ai.usage.input_tokens"] == 12 and a["gen_ai.usage.cache_read.input_tokens"] == 5, a
assert "gen_ai.usage.cache_creation.input_tokens" not in a, a  # OpenAI reports no cache writes
PY

# ---- Anthropic: the prompt-cache writes too (counted in the input tokens, as the conventions say) ----
: >"$tmp/spans.jsonl"
script '[{"text":"plain","model":"claude-test-20260101","id":"msg_r2",
          "usage":{"input_tokens":3,"output_tokens":2,"cached_tokens":5,"cache_write_tokens":4}}]'
run 0 "$rein" chat --provider anthropic --base-url "$url" --model claude-test "hello" \
  --verification off --json
python3 - "$tmp/spans.jsonl" <<'PY' || fail "the chat span does not count the cache writes"
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
a = next(s for s in spans if s["name"] == "chat claude-test")["attrs"]
assert a["gen_ai.response.model"] == "claude-test-20260101" and a["gen_ai.response.id"] == "msg_r2", a
assert a["gen_ai.usage.input_tokens"] == 12, a
assert a["gen_ai.usage.cache_read.input_tokens"] == 5, a
assert a["gen_ai.usage.cache_creation.input_tokens"] == 4, a
PY

# ---- the content-capture switch ----
: >"$tmp/spans.jsonl"
script '[{"tool_calls":[{"id":"k1","name":"echo","arguments":"{\"text\":\"secret-word\"}"}]},
         {"text":"It said secret-word."}]'
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true \
  run 0 "$rein" chat "${model[@]}" "echo the secret-word" --verification off --json
python3 - "$tmp/spans.jsonl" <<'PY' || fail "contents were not captured"
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
tool = next(s for s in spans if s["name"] == "execute_tool echo")
assert "secret-word" in tool["attrs"]["gen_ai.tool.call.arguments"], tool["attrs"]
assert "secret-word" in tool["attrs"]["gen_ai.tool.call.result"], tool["attrs"]
chat = next(s for s in spans if s["name"] == "chat test-model")
assert "echo the secret-word" in chat["attrs"]["gen_ai.input.messages"]
PY

# ---- a protocol the collector does not take: the batch is refused (415), not retried ----
: >"$tmp/spans.jsonl"
script '[{"text":"plain"}]'
OTEL_EXPORTER_OTLP_PROTOCOL=http/json REIN_LOG=warn \
  run 0 "$rein" chat "${model[@]}" "hello" --verification off --json
[ ! -s "$tmp/spans.jsonl" ] || fail "the receiver kept spans it should have refused"
grep -q "dropped" "$tmp/err" || fail "the refused batch was not reported: $(cat "$tmp/err")"

# ---- metrics, both protocols: what one turn recorded, sent once at exit ----
for proto in http/protobuf http/json; do
  rm -f "$tmp/spans.jsonl.metrics"
  script '[{"tool_calls":[{"id":"m1","name":"echo","arguments":"{\"text\":\"hi\"}"}],
           "model":"test-model-2026-01-01","usage":{"input_tokens":0,"output_tokens":7}},
           {"text":"done","model":"test-model-2026-01-01",
            "usage":{"input_tokens":0,"output_tokens":300}}]'
  OTEL_EXPORTER_OTLP_PROTOCOL=$proto OTEL_TRACES_EXPORTER=none OTEL_METRIC_EXPORT_INTERVAL=600000 \
    run 0 "$rein" chat "${model[@]}" "echo hi" --mode auto --verification off --json
  [ -s "$tmp/spans.jsonl.metrics" ] || fail "$proto: no metrics arrived: $(cat "$tmp/recv.err")"
  python3 - "$tmp/spans.jsonl.metrics" "$proto" <<'PY' || fail "$proto: the decoded metrics are not the turn's"
import json, sys
points = [json.loads(l) for l in open(sys.argv[1])]
ctype = "application/json" if sys.argv[2] == "http/json" else "application/x-protobuf"
assert all(p["contentType"] == ctype and p["resource"]["service.name"] == "otlp-test" for p in points)
def one(name, **attrs):
    found = [p for p in points if p["name"] == name and all(p["attrs"].get(k) == v for k, v in attrs.items())]
    assert len(found) == 1, (name, attrs, points)
    return found[0]
base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai-compatible",
        "gen_ai.request.model": "test-model", "gen_ai.response.model": "test-model-2026-01-01"}
tokens = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
secs = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
inp = one("gen_ai.client.token.usage", **base, **{"gen_ai.token.type": "input"})
out = one("gen_ai.client.token.usage", **base, **{"gen_ai.token.type": "output"})
for h in (inp, out):
    assert h["type"] == "histogram" and h["temporality"] == 2 and h["unit"] == "{token}", h
    assert h["bounds"] == tokens and len(h["bucketCounts"]) == len(tokens) + 1, h
    assert h["count"] == 2 and sum(h["bucketCounts"]) == 2 and int(h["time"]) >= int(h["start"]) > 0, h
# Two requests with no input tokens: the sum is zero and still sent (explicit presence).
assert inp["hasSum"] and inp["sum"] == 0 and inp["min"] == 0 and inp["max"] == 0, inp
assert inp["bucketCounts"][0] == 2, inp
assert out["sum"] == 307 and out["min"] == 7 and out["max"] == 300, out
assert out["bucketCounts"][2] == 1 and out["bucketCounts"][5] == 1, out  # 7 <= 16, 300 <= 1024
dur = one("gen_ai.client.operation.duration", **base)
assert dur["unit"] == "s" and dur["bounds"] == secs and dur["count"] == 2 and dur["sum"] > 0, dur
assert "error.type" not in dur["attrs"], dur
calls = one("rein_tool_calls", tool="echo", status="success")
assert calls["type"] == "sum" and calls["monotonic"] and calls["temporality"] == 2, calls
assert calls["value"] == 1, calls
PY
done

# ---- a protocol rein does not speak: reported, and the command runs untraced ----
script '[{"text":"plain"}]'
OTEL_EXPORTER_OTLP_PROTOCOL=grpc run 0 "$rein" chat "${model[@]}" "hello" --verification off --json
grep -q "OTEL_EXPORTER_OTLP_PROTOCOL" "$tmp/err" || fail "grpc was not refused: $(cat "$tmp/err")"
echo "otlp_export: ok"
