#!/usr/bin/env bash
# Approvals over MCP (issue 20, seed 001): a real MCP client (the TypeScript SDK,
# tests/mcp/elicit_client.mjs) that declares the elicitation capability calls a destructive
# tool of `rein mcp serve` (stdio) and of `rein serve`'s /mcp (HTTP). rein asks the client with
# elicitation/create before running it; the tool runs only when the client's user accepts with
# approve true, and a decline, a cancel or approve false leaves it unrun with a denied result.
# A non-destructive tool runs without a question. A client that also offers sampling is asked
# to review the call first (self-verification with its model, sampling/createMessage): a NO
# stops it before any person is asked. Process skills ask the client themselves (decision 0031;
# the conformance fixtures test_sampling and test_elicitation): the client's model's answer and
# its user's form reach the skill, and a client without the capability gets a tool error that
# names it. A prompt template's missing required argument is asked for the same way during
# prompts/get. Exit 77 without node/npm packages.
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${REIN_BUILD_DIR:-$here/../build-test}"
rein="${REIN_BIN:-$build/rein}"
bash "$here/mcp/install.sh"
case $? in 0) ;; 77) exit 77 ;; *) exit 1 ;; esac
node22="$here/mcp/node_modules/node/bin/node"
client="$here/mcp/elicit_client.mjs"

work="$(mktemp -d)"
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/skills/wipe" "$work/skills/look"
cat >"$work/skills/wipe/manifest.json" <<JSON
{"id": "wipe", "description": "Deletes the marker file", "destructive": true,
 "parameters": {"type": "object"},
 "runner": {"kind": "process", "command": ["sh", "-c", "cat >/dev/null; rm -f '$work/marker'; echo '{\"wiped\": true}'"]}}
JSON
cat >"$work/skills/look/manifest.json" <<JSON
{"id": "look", "description": "Reads nothing", "read_only": true,
 "parameters": {"type": "object"},
 "runner": {"kind": "process", "command": ["sh", "-c", "cat >/dev/null; echo '{\"seen\": true}'"]}}
JSON
export REIN_SKILLS_PATH="$work/skills:$here/data/mcp-skills" REIN_LOG=error
unset REIN_CONFIG REIN_MCP_CONFIG
status=0
fail() { echo "mcp_elicitation: $*" >&2; status=1; }

# check MODE TARGET TOOL ANSWER RAN ASKED: runs the client, then checks whether the tool ran
# (the marker file is gone) and how many questions rein asked.
check() {
  local mode=$1 target=$2 tool=$3 answer=$4 ran=$5 asked=$6 review=${7:-} out
  : >"$work/marker"
  out="$(cd "$here/mcp" && timeout 60 "$node22" "$client" "$mode" "$target" "$tool" "$answer" $review \
    2>"$work/client.err")" || { fail "$mode $tool $answer: the client failed"; cat "$work/client.err" >&2; return; }
  local n
  n="$(printf '%s' "$out" | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);console.log(o.asked.length+" "+o.sampled.length+" "+(o.result.isError?"error":"ok")+" "+(o.asked[0]?o.asked[0].message:""))})')"
  read -r count reviews outcome message <<<"$n"
  [ "$reviews" = "$([ -n "$review" ] && echo 1 || echo 0)" ] ||
    fail "$mode $tool $answer: rein asked the client's model $reviews times ($out)"
  [ "$count" = "$asked" ] || fail "$mode $tool $answer: rein asked $count times, want $asked ($out)"
  if [ "$ran" = untouched ]; then
    [ "$outcome" = ok ] || fail "$mode $tool: the result is an error ($out)"
  elif [ "$ran" = yes ]; then
    [ ! -e "$work/marker" ] || fail "$mode $tool $answer: the tool did not run ($out)"
    [ "$outcome" = ok ] || fail "$mode $tool $answer: the result is an error ($out)"
  else
    [ -e "$work/marker" ] || fail "$mode $tool $answer: the tool ran without approval ($out)"
    [ "$outcome" = error ] || fail "$mode $tool $answer: the result is not an error ($out)"
    printf '%s' "$out" | grep -qE 'not approve|rejected this call' ||
      fail "$mode $tool $answer: no reason given ($out)"
  fi
  if [ "$asked" = 1 ] && ! printf '%s' "$message" | grep -q 'destructive'; then
    fail "$mode $tool $answer: the question does not say what is asked ($out)"
  fi
}

# check_ask MODE TARGET TOOL ARGS ANSWER REVIEW WANT: a process skill that asks the client;
# the result's text must contain WANT (an error result when WANT starts with "error:").
check_ask() {
  local mode=$1 target=$2 tool=$3 args=$4 answer=$5 review=$6 want=$7 out text
  out="$(cd "$here/mcp" && TOOL_ARGS="$args" timeout 60 "$node22" "$client" "$mode" "$target" \
    "$tool" "$answer" $review 2>"$work/client.err")" ||
    { fail "$mode $tool: the client failed"; cat "$work/client.err" >&2; return; }
  text="$(printf '%s' "$out" | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);console.log((o.result.isError?"error:":"")+o.result.content[0].text)})')"
  case "$text" in
    *"${want#error:}"*) ;;
    *) fail "$mode $tool ($answer $review): got \"$text\", want \"$want\"" ;;
  esac
  case "$want" in
    error:*) [ "${text#error:}" != "$text" ] || fail "$mode $tool: not an error ($out)" ;;
    *) [ "${text#error:}" = "$text" ] || fail "$mode $tool: an error ($out)" ;;
  esac
}

# check_prompt MODE TARGET ANSWER WANT: the client gets a prompt template without its required
# argument arg1; rein asks for it (elicitation/create) during prompts/get, and the prompt's
# text (or the error, when WANT starts with "error:") must contain WANT.
check_prompt() {
  local mode=$1 target=$2 answer=$3 want=$4 out text
  out="$(cd "$here/mcp" && PROMPT=test_prompt_with_arguments PROMPT_ARGS='{"arg2":"two"}' \
    ANSWER_CONTENT='{"arg1":"hello"}' timeout 60 "$node22" "$client" "$mode" "$target" - \
    "$answer" 2>"$work/client.err")" ||
    { fail "$mode prompt ($answer): the client failed"; cat "$work/client.err" >&2; return; }
  text="$(printf '%s' "$out" | "$node22" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const o=JSON.parse(s);console.log(o.asked.length+" "+(o.result.error?"error:"+o.result.error:o.result.messages[0].content.text))})')"
  case "$text" in
    "1 ${want}"*) ;;
    "1 error:"*"${want#error:}"*) [ "${want#error:}" != "$want" ] || fail "$mode prompt: $text" ;;
    *) fail "$mode prompt ($answer): got \"$text\", want one question and \"$want\"" ;;
  esac
}

for answer in accept reject decline cancel; do
  ran=no; [ $answer = accept ] && ran=yes
  check stdio "$rein" wipe $answer $ran 1
done
check stdio "$rein" look decline untouched 0
# Self-verification by the client's model: YES goes on to the person, NO stops the call.
check stdio "$rein" wipe accept yes 1 YES
check stdio "$rein" wipe accept no 0 NO
check_ask stdio "$rein" test_sampling '{"prompt":"Say hi"}' accept "model-says-hi" \
  "LLM response: model-says-hi"
check_ask stdio "$rein" test_sampling '{"prompt":"Say hi"}' accept "" \
  'error:the client could not be asked (-32601): the MCP client did not declare the \"sampling\" capability'
check_ask stdio "$rein" test_elicitation '{"message":"Who are you?"}' accept "" \
  'User response: action=accept, content={"approve": true}'
check_ask stdio "$rein" test_elicitation '{"message":"Who are you?"}' decline "" \
  'User response: action=decline'
check_prompt stdio "$rein" accept "Prompt with arguments: arg1='hello', arg2='two'"
check_prompt stdio "$rein" decline "error:the client answered decline"

# The same over Streamable HTTP: the question travels on the call's event stream and the
# answer comes back as a POST.
(cd "$work" && exec "$rein" serve --port 0 --store "sqlite:$work/s.db") >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's/^rein .* listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out")"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "mcp_elicitation: rein serve printed no address" >&2; cat "$work/serve.err" >&2; exit 1; }
check http "$url/mcp" wipe accept yes 1
check http "$url/mcp" wipe decline no 1
check_ask http "$url/mcp" test_sampling '{"prompt":"Say hi"}' accept "model-says-hi" \
  "LLM response: model-says-hi"
check_ask http "$url/mcp" test_elicitation '{"message":"Who are you?"}' accept "" \
  'User response: action=accept, content={"approve": true}'
check_ask http "$url/mcp" test_elicitation '{"message":"Who are you?"}' cancel "" \
  'User response: action=cancel'
check_prompt http "$url/mcp" accept "Prompt with arguments: arg1='hello', arg2='two'"
check_prompt http "$url/mcp" cancel "error:the client answered cancel"

# rein as the client of a server that asks outside the call's stream, on the standalone GET
# stream, which that server opens late: rein's call waits until the stream is open, so the
# question (which the server would drop with no stream open) reaches it.
"$node22" "$here/mcp/late_stream_server.mjs" >"$work/late.out" 2>"$work/late.err" &
late_pid=$!
port=""
for _ in $(seq 1 100); do
  port="$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$work/late.out")"
  [ -n "$port" ] && break
  sleep 0.1
done
if [ -z "$port" ]; then
  fail "the late-stream server did not start: $(cat "$work/late.err")"
else
  out="$(timeout 60 "$rein" mcp call --url "http://127.0.0.1:$port/mcp" --elicit defaults \
    --timeout 10s ask '{}' 2>"$work/late-call.err")" ||
    fail "a question on a late standalone stream was not answered: $out $(cat "$work/late-call.err")"
  case "$out" in
    *'accept {\"name\":\"Ada\"}'*) ;;
    *) fail "late standalone stream: got $out" ;;
  esac
fi
kill "$late_pid" 2>/dev/null
wait "$late_pid" 2>/dev/null

[ $status -eq 0 ] && echo "mcp_elicitation: rein asked before every destructive call, and ran it only when approved; process skills asked the client and got its answers; prompts asked for their arguments"
exit $status
