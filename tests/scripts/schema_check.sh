#!/usr/bin/env bash
# `rein schema check`: exit codes 0 (valid), 1 (invalid), 2 (unusable file or schema) and the
# lines it prints, against the built binary ($REIN_BIN).
set -uo pipefail
rein=${REIN_BIN:?REIN_BIN is not set}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0

expect() { # name, expected exit, expected stdout (exact), command...
  local name=$1 want_rc=$2 want_out=$3
  shift 3
  local out rc
  out=$("$@" 2>"$dir/stderr")
  rc=$?
  if [ "$rc" != "$want_rc" ] || [ "$out" != "$want_out" ]; then
    echo "FAIL $name: exit $rc (want $want_rc)"
    echo "  stdout: $out"
    echo "  want:   $want_out"
    echo "  stderr: $(cat "$dir/stderr")"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}
expect_err() { # name, expected exit, text stderr must contain, command...
  local name=$1 want_rc=$2 needle=$3
  shift 3
  "$@" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$?
  if [ "$rc" != "$want_rc" ] || ! grep -qF -- "$needle" "$dir/stderr"; then
    echo "FAIL $name: exit $rc (want $want_rc), stderr: $(cat "$dir/stderr") (want: $needle)"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

cat >"$dir/schema.json" <<'JSON'
{"type": "object",
 "properties": {"query": {"type": "string", "pattern": "^[a-z]+$"},
                "limit": {"type": "integer", "minimum": 1},
                "when": {"type": "string", "format": "date"}},
 "required": ["query"], "additionalProperties": false}
JSON
echo '{"query": "abc", "limit": 3, "when": "2024-01-01"}' >"$dir/good.json"
echo '{"limit": "20", "colour": "red"}' >"$dir/bad.json"
echo '{"query": "abc", "when": "yesterday"}' >"$dir/date.json"
echo '{"query": ' >"$dir/broken.json"
printf '{"query": "\xff"}' >"$dir/utf8.json"
echo '{"n": 1e400}' >"$dir/huge.json"
echo '{"properties": {"x": {"pattern": "([a-z"}}}' >"$dir/badregex.json"
echo '{"$ref": "http://example.com/remote.json"}' >"$dir/remote.json"
echo '{"$ref": "#"}' >"$dir/cycle.json"

expect valid 0 "valid" "$rein" schema check "$dir/schema.json" "$dir/good.json"
expect invalid 1 '/limit: must be integer, got string "20"
/: additional property "colour" is not allowed
/: required property "query" is missing' "$rein" schema check "$dir/schema.json" "$dir/bad.json"
expect format-annotation 0 "valid" "$rein" schema check "$dir/schema.json" "$dir/date.json"
expect format-assert 1 '/when: must be a valid date, got "yesterday"' \
  "$rein" schema check "$dir/schema.json" "$dir/date.json" --format-assert
expect json 1 '{"valid":false,"errors":[{"instance_path":"/when","keyword_path":"/properties/when/format","keyword":"format","message":"must be a valid date, got \"yesterday\""}]}' \
  "$rein" schema check --format-assert --json "$dir/schema.json" "$dir/date.json"
expect json-valid 0 '{"valid":true,"errors":[]}' "$rein" schema check "$dir/schema.json" "$dir/good.json" --json
expect_err broken-instance 2 "instance file $dir/broken.json:2:" "$rein" schema check "$dir/schema.json" "$dir/broken.json"
expect_err broken-schema 2 "schema file $dir/broken.json:2:" "$rein" schema check "$dir/broken.json" "$dir/good.json"
expect_err missing-file 2 "$dir/nope.json" "$rein" schema check "$dir/schema.json" "$dir/nope.json"
expect_err invalid-utf8 2 "instance file $dir/utf8.json" "$rein" schema check "$dir/schema.json" "$dir/utf8.json"
expect_err huge-number 2 "instance file $dir/huge.json" "$rein" schema check "$dir/schema.json" "$dir/huge.json"
expect_err bad-regex 2 "/properties/x/pattern: invalid regular expression" "$rein" schema check "$dir/badregex.json" "$dir/good.json"
expect_err remote-ref 2 "remote documents are not fetched" "$rein" schema check "$dir/remote.json" "$dir/good.json"
expect_err ref-cycle 2 "reference cycle" "$rein" schema check "$dir/cycle.json" "$dir/good.json"
expect_err usage 2 "need SCHEMA.json and INSTANCE.json" "$rein" schema check "$dir/schema.json"
expect_err unknown-option 2 "unknown option '--frobnicate'" "$rein" schema check --frobnicate "$dir/schema.json" "$dir/good.json"

echo "schema_check: $fails failed"
[ "$fails" -eq 0 ]
