#!/usr/bin/env bash
# `rein provider parse`: exit 0 and the assembled response for a recording, 2 with a message
# saying where when the file cannot be read as the format asked for, *.stream.jsonl read as
# one payload per line, and the notes for n > 1 choices. Skips (77) without the fixtures.
set -uo pipefail
rein="${REIN_BIN:?REIN_BIN is not set}"
shared="${REIN_SHARED_DIR:-}"
fx="$shared/fixtures"
[ -f "$fx/SOURCES.md" ] || { echo "provider_parse: no shared fixtures; skipping"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

expect() { # name, expected exit code, command...
  local name=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: exit $got, want $want"; cat "$tmp/err"; fail=1
  fi
}
has() { # name, file, text
  grep -qF -- "$3" "$2" || { echo "FAIL $1: '$3' not in $(basename "$2")"; cat "$2"; fail=1; }
}

expect openai-sse 0 "$rein" provider parse --format openai-sse "$fx/openai/pydantic-single-tool-call.sse"
python3 - "$tmp/out" <<'PY' || fail=1
import json, sys
o = json.load(open(sys.argv[1]))
assert set(o) == {"text", "tool_calls", "finish_reason", "usage", "reasoning", "refusal", "error"}, o.keys()
c = o["tool_calls"][0]
assert set(c) == {"id", "name", "arguments", "raw_arguments", "status", "from_text"}, c.keys()
assert c["name"] == "get_capital" and c["arguments"] == {"country": "UK"}, c
assert c["raw_arguments"] == '{"country":"UK"}' and c["status"] == "ok" and c["from_text"] is False
# usage: the token counts, and the cached and reasoning tokens OpenAI reports with them
assert o["finish_reason"] == "tool_calls" and o["usage"] == {
    "input_tokens": 53, "output_tokens": 15, "cached_tokens": 0, "reasoning_tokens": 0}, o["usage"]
assert o["error"] is None and o["refusal"] is None
PY

# .stream.jsonl files are one payload per line: no flag needed.
expect jsonl 0 "$rein" provider parse --format anthropic-sse "$fx/anthropic/vercel-thinking-signature.stream.jsonl"
has jsonl "$tmp/out" '"text": "925 ÷ 5 = 185"'
expect jsonl-flag 0 "$rein" provider parse --format openai-sse --jsonl - <"$fx/openai-compatible/vercel-groq-llama33-tool-call.stream.jsonl"
has jsonl-flag "$tmp/out" '"name": "weather"'

expect n3-note 0 "$rein" provider parse --format openai-sse "$fx/openai/openai-python-gpt4o-n3-multiple-choices.sse"
has n3-note "$tmp/err" "choice 0 was assembled"

# The Ollama leak is text, unless the offered tools are given: then it is a call.
leak="$fx/ollama/asknvim-ollama-v1-stream-tool-call-leaked-as-content.SINGLE-CHUNK.sse"
expect leak-text 0 "$rein" provider parse --format openai-sse "$leak"
has leak-text "$tmp/out" '"tool_calls": []'
expect leak-call 0 "$rein" provider parse --format openai-sse --tools run_command,read "$leak"
has leak-call "$tmp/out" '"raw_arguments": "{\"command\":\"ls -l\"}"'
has leak-call "$tmp/out" '"from_text": true'

# In-stream errors are part of a file that parsed: exit 0 with the error object.
expect stream-error 0 "$rein" provider parse --format openai-sse "$fx/groq/pydantic-groq-tool-use-failed-stream-error.sse"
has stream-error "$tmp/out" '"code": "tool_use_failed"'

# Files that are not the format: exit 2, saying where.
printf 'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: {"choices": [\n\n' >"$tmp/bad.sse"
expect bad-event 2 "$rein" provider parse --format openai-sse "$tmp/bad.sse"
has bad-event "$tmp/err" "event 2 (line"
expect not-sse 2 "$rein" provider parse --format openai-sse "$fx/openai/pydantic-error-400.json"
has not-sse "$tmp/err" "no SSE data events"
expect wrong-wire 2 "$rein" provider parse --format openai-sse "$fx/anthropic/sdkpy-sonnet4-text-then-tool-use.sse"
has wrong-wire "$tmp/err" "shape of openai-sse"
printf '{"model": "m", "message": ' >"$tmp/cut.json"
expect cut-json 2 "$rein" provider parse --format ollama-json "$tmp/cut.json"
has cut-json "$tmp/err" "line 1"
expect missing 2 "$rein" provider parse --format openai-json "$tmp/nope.json"
expect bad-format 2 "$rein" provider parse --format cohere-sse "$tmp/bad.sse"
has bad-format "$tmp/err" "unknown format"

[ $fail = 0 ] && echo "provider_parse: ok"
exit $fail
