#!/usr/bin/env bash
# The module graph: which module of src/ depends on which, and where the layering breaks.
#
# Usage: scripts/modgraph.sh [--check] [--dot] [BUILD_DIR]
#   BUILD_DIR  a built CMake tree (default: build-test, else build); `make` or `make test`
#              makes one. Its object files are read with nm.
#   --check    print only the problems; exit 1 when there is any (tests/scripts/layering.sh)
#   --dot      print the link graph in Graphviz dot instead
#
# Two views, both from the project's own files and binutils:
#   link     module A -> B when an object file of src/A uses a symbol an object of src/B
#            defines (nm of BUILD_DIR/CMakeFiles/{rein_obj,rein}.dir);
#   include  module A -> B when a file of src/A (or a public header A owns) includes a header
#            of B: a public <rein/X.h> belongs to the module that defines most of the
#            functions it declares; a quoted "...h" belongs to the folder it is in.
# Problems:
#   upward   an edge from a module to one in a higher layer (LAYERS below), or to another
#            module of the same layer;
#   private  a quoted #include that reaches a header in another module's folder: every
#            header under src/ is private to its folder, except $SHARED, core's internal
#            interface for the whole library (shared parts move down into a public header
#            or into that one).
#
# The layers, lowest first (docs/DESIGN.md explains them; decision 0013). Modules in one
# layer may not use each other. A module of src/ not listed here is reported, so a new module
# takes its place in this list on purpose.
LAYERS=(core schema trace tools "providers skills store" claims agent session verify plan server gateway mcp cli)
SHARED=src/core/internal.h

set -euo pipefail
cd "$(dirname "$0")/.."

check=0 dot=0 build=""
for a in "$@"; do
  case $a in
  --check) check=1 ;;
  --dot) dot=1 ;;
  -h | --help)
    sed -n '2,/^LAYERS/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  -*)
    echo "modgraph: unknown option $a (see --help)" >&2
    exit 2
    ;;
  *) build=$a ;;
  esac
done
if [ -z "$build" ]; then
  for b in build-test build; do
    if [ -d "$b/CMakeFiles/rein_obj.dir" ]; then
      build=$b
      break
    fi
  done
fi
if [ -z "$build" ] || [ ! -d "$build/CMakeFiles/rein_obj.dir/src" ]; then
  echo "modgraph: no built tree${build:+ at $build}: run make (or make test) first" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rank.txt: "module rank"
r=0
for level in "${LAYERS[@]}"; do
  for m in $level; do echo "$m $r"; done
  r=$((r + 1))
done >"$tmp/rank.txt"

# syms.txt: "D module symbol" for what an object defines, "U module symbol" for what it uses.
shopt -s nullglob
objs=("$build"/CMakeFiles/rein_obj.dir/src/*/*.o "$build"/CMakeFiles/rein.dir/src/*/*.o)
if [ ${#objs[@]} -eq 0 ]; then
  echo "modgraph: $build has no object files yet: build it first" >&2
  exit 2
fi
nm -P -A -g "${objs[@]}" | awk '{ m = $1; sub(/\/[^\/]*$/, "", m); sub(/.*\//, "", m)
    print ($3 == "U" || $3 == "w" || $3 == "v") ? "U" : "D", m, $2 }' >"$tmp/syms.txt"

# link.txt: "from to symbol" for every symbol used across modules.
awk '$1 == "D" { def[$3] = $2 }
     $1 == "U" { n++; um[n] = $2; us[n] = $3 }
     END { for (i = 1; i <= n; i++)
             if ((us[i] in def) && def[us[i]] != um[i]) print um[i], def[us[i]], us[i] }' \
  "$tmp/syms.txt" | sort -u >"$tmp/link.txt"

# owner.txt: "header module" for each public header, by the functions it declares.
for h in include/rein/*.h; do
  { grep -oE '\brein_[a-z0-9_]+[[:space:]]*\(' "$h" || true; } | tr -d '( \t' | sort -u |
    awk -v h="$(basename "$h")" 'NR == FNR { if ($1 == "D") def[$3] = $2; next }
         ($1 in def) { c[def[$1]]++ }
         END { best = ""; for (m in c) if (best == "" || c[m] > c[best]) best = m
               if (best != "") print h, best }' "$tmp/syms.txt" -
done >"$tmp/owner.txt"

# includes.txt: "file line header" for every #include of a source or public header, the
# header written as <rein/x.h> or "path" (other <...> headers are left out).
{ git ls-files --cached --others --exclude-standard 'src/*.c' 'src/*.h' 'include/rein/*.h' \
    2>/dev/null || find src include/rein -name '*.[ch]'; } |
  xargs awk '/^[ \t]*#[ \t]*include[ \t]*("|<rein\/)/ {
               s = $0; sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
               if (substr(s, 1, 1) == "<") { sub(/>.*/, ">", s) } else { s = substr(s, 2); sub(/".*/, "", s); s = "\"" s "\"" }
               print FILENAME, FNR, s }' >"$tmp/includes.txt"

# incl.txt: "from to file:line header" for every include that crosses a module; private.txt
# for quoted includes that reach into another module's folder.
declare -A owner
while read -r h m; do owner[$h]=$m; done <"$tmp/owner.txt"
: >"$tmp/private.txt"
while read -r f n inc; do
  case $f in
  include/rein/*) m=${owner[${f##*/}]:-} ;;
  *) m=${f#src/} m=${m%%/*} ;;
  esac
  [ -n "$m" ] || continue
  case $inc in
  "<rein/"*)
    h=${inc#<rein/} h=${h%>}
    to=${owner[$h]:-}
    if [ -n "$to" ] && [ "$to" != "$m" ]; then echo "$m $to $f:$n $inc"; fi
    ;;
  *)
    q=${inc#\"} q=${q%\"}
    if [ -e "${f%/*}/$q" ]; then
      p=$(realpath -m --relative-to=. "${f%/*}/$q")
    elif [ -e "src/$q" ]; then
      p=$(realpath -m --relative-to=. "src/$q")
    else
      continue
    fi
    case $p in
    src/*/*)
      to=${p#src/} to=${to%%/*}
      if [ "$to" != "$m" ] && [ "$p" != "$SHARED" ]; then
        echo "$m $to $f:$n $inc"
        echo "$f:$n includes $p, private to src/$to/" >&3
      fi
      ;;
    esac
    ;;
  esac
done <"$tmp/includes.txt" 3>"$tmp/private.txt" | sort -u >"$tmp/incl.txt"

# problems.txt: "kind from to detail"
awk 'NR == FNR { rank[$1] = $2; next }
     FILENAME ~ /link.txt$/ { key = $1 " " $2; if (!(key in lk)) lk[key] = $3; else if (length(lk[key]) < 60) lk[key] = lk[key] ", " $3; next }
     { key = $1 " " $2; if (!(key in ik)) ik[key] = $3 " " $4 }
     function bad(f, t) { return !(f in rank) || !(t in rank) || rank[t] >= rank[f] }
     function why(f, t) { if (!(f in rank)) return "(" f " has no layer)"; if (!(t in rank)) return "(" t " has no layer)"; return rank[t] > rank[f] ? "(upward)" : "(same layer)" }
     END {
       for (k in lk) { split(k, e, " "); if (bad(e[1], e[2])) print "upward", e[1], e[2], why(e[1], e[2]), "link:", lk[k] }
       for (k in ik) { split(k, e, " "); if (bad(e[1], e[2])) print "upward", e[1], e[2], why(e[1], e[2]), "include:", ik[k] }
     }' "$tmp/rank.txt" "$tmp/link.txt" "$tmp/incl.txt" | sort >"$tmp/problems.txt"

if [ $dot -eq 1 ]; then
  echo "digraph rein {"
  echo "  rankdir=BT; node [shape=box];"
  cut -d' ' -f1,2 "$tmp/link.txt" | sort -u | while read -r f t; do
    if grep -q "^upward $f $t " "$tmp/problems.txt"; then
      echo "  \"$f\" -> \"$t\" [color=red];"
    else
      echo "  \"$f\" -> \"$t\";"
    fi
  done
  echo "}"
  exit 0
fi

if [ $check -eq 0 ]; then
  echo "layers, lowest first (modules in one layer may not use each other):"
  for level in "${LAYERS[@]}"; do echo "  $level"; done
  echo
  echo "link dependencies (nm of $build; number of symbols used):"
  awk '{ c[$1 " " $2]++ } END { for (k in c) { split(k, e, " "); print e[1], e[2], c[k] } }' \
    "$tmp/link.txt" | sort | awk '$1 != prev { if (prev != "") print line; prev = $1; line = sprintf("  %-10s ->", $1) }
      { line = line " " $2 "(" $3 ")" } END { if (prev != "") print line }'
  echo
  echo "include dependencies (public headers by owner, quoted headers by folder):"
  cut -d' ' -f1,2 "$tmp/incl.txt" | sort -u | awk '$1 != prev { if (prev != "") print line; prev = $1; line = sprintf("  %-10s ->", $1) }
      { line = line " " $2 } END { if (prev != "") print line }'
  echo
fi
nup=$(wc -l <"$tmp/problems.txt")
npriv=$(wc -l <"$tmp/private.txt")
echo "upward or same-layer edges: $nup"
sed 's/^upward /  /' "$tmp/problems.txt"
echo "private-header reaches: $npriv"
sort "$tmp/private.txt" | sed 's/^/  /'
if [ "$nup" -gt 0 ] || [ "$npriv" -gt 0 ]; then
  exit 1
fi
