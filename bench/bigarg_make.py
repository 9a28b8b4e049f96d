"""bench/bigarg.sh's input: one OpenAI chat-completion stream whose only tool call carries one
large `arguments` value in a single delta, and the tool's parameter schema.

Usage: bigarg_make.py KIND BYTES SSE-OUT SCHEMA-OUT
KIND text:    {"path", "content"}: one long string of words with escapes (newlines, quotes,
              backslashes) and non-ASCII text, as a file written through a tool.
KIND records: {"table", "rows": [...]}: many small objects (integers, names, prices, tags,
              booleans, ratios), as a table handed to a tool.
"""
import json
import random
import sys

kind, size, sse_out, schema_out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rnd = random.Random(7)
if kind == "text":
    words = ["alpha", "beta", "gamma", "naïve", "café", "line\n", "tab\t", "quote\"q\"",
             "back\\slash", "日本語", "emoji😀", "delta", "epsilon", "zeta"]
    parts, n = [], 0
    while n < size:
        w = rnd.choice(words)
        parts.append(w)
        n += len(w.encode()) + 1
    args = {"path": "notes/big.md", "content": " ".join(parts)}
    schema = {"type": "object", "additionalProperties": False, "required": ["path", "content"],
              "properties": {"path": {"type": "string", "minLength": 1},
                             "content": {"type": "string"}}}
elif kind == "records":
    rows, n, i = [], 0, 0
    while n < size:
        row = {"id": i, "name": "item %d" % i, "price": round(rnd.random() * 1000, 2),
               "tags": ["a", "b"], "ok": i % 2 == 0, "ratio": rnd.random()}
        rows.append(row)
        n += len(json.dumps(row, separators=(",", ":")))
        i += 1
    args = {"table": "items", "rows": rows}
    schema = {"type": "object", "required": ["table", "rows"], "properties": {
        "table": {"type": "string"},
        "rows": {"type": "array", "items": {
            "type": "object", "required": ["id", "name"], "properties": {
                "id": {"type": "integer", "minimum": 0}, "name": {"type": "string"},
                "price": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
                "ok": {"type": "boolean"}, "ratio": {"type": "number"}}}}}}
else:
    sys.exit("bigarg_make.py: KIND is text or records")
text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
call = {"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "write", "arguments": text}}
chunks = [{"id": "c", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]},
          {"id": "c", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
with open(sse_out, "w", encoding="utf-8") as f:
    for c in chunks:
        f.write("data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + "\n\n")
    f.write("data: [DONE]\n\n")
with open(schema_out, "w", encoding="utf-8") as f:
    json.dump(schema, f)
