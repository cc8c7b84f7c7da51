#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# timeline_stream.sh POKELAB: `pokelab timeline` reads a trace that is not
# a regular file as a stream (issue 35): from a pipe (/dev/stdin), from a
# FIFO with a writer, and a trace.dat from a pipe, each giving the picture
# the file gives by name; a FIFO with no writer is refused in one line
# within seconds, never waited on forever; a text trace cut mid-line is
# drawn without its last line, and says so.
. "$(dirname "$0")/lib.sh"
"$pokelab" demo --cpus 3 --flips 2 --trace "$dir/t.txt" --trace "$dir/t.dat" \
	>"$dir/demo.out" 2>&1 || fail "demo failed"
"$pokelab" timeline "$dir/t.txt" -o "$dir/file.svg" --title t >"$dir/file.out" 2>&1 ||
	fail "timeline of the file failed"

# a pipe: the same picture
cat "$dir/t.txt" | "$pokelab" timeline /dev/stdin -o "$dir/pipe.svg" --title t \
	>"$dir/pipe.out" 2>&1 || fail "timeline /dev/stdin from a pipe failed"
cmp -s "$dir/file.svg" "$dir/pipe.svg" || fail "a pipe and the file give different pictures"
# a trace.dat through a pipe: through trace-cmd, the same picture
cat "$dir/t.dat" | "$pokelab" timeline /dev/stdin -o "$dir/dat.svg" --title t \
	>"$dir/dat.out" 2>&1 || fail "timeline /dev/stdin of a trace.dat failed"
cmp -s "$dir/file.svg" "$dir/dat.svg" || fail "a piped trace.dat gives another picture"

# a FIFO with its writer
mkfifo "$dir/fifo"
cat "$dir/t.txt" >"$dir/fifo" &
"$pokelab" timeline "$dir/fifo" -o "$dir/fifo.svg" --title t >"$dir/fifo.out" 2>&1 ||
	fail "timeline FIFO with a writer failed"
wait
cmp -s "$dir/file.svg" "$dir/fifo.svg" || fail "a FIFO and the file give different pictures"

# a FIFO with no writer: refused, in one line, and soon (timeout: it must not hang)
timeout 30 "$pokelab" timeline "$dir/fifo" -o "$dir/none.svg" >"$dir/none.out" 2>"$dir/none.err"
rc=$?
[ $rc -eq 124 ] && fail "timeline FIFO with no writer: still waiting after 30 s"
[ $rc -eq 2 ] || fail "timeline FIFO with no writer: exit status $rc, expected 2"
[ "$(wc -l <"$dir/none.err")" -eq 1 ] && grep -q "^pokelab: timeline: $dir/fifo: nothing to read" \
	"$dir/none.err" || fail "timeline FIFO with no writer: not one line naming it"
[ -e "$dir/none.svg" ] && fail "timeline FIFO with no writer: wrote a picture"

# a text trace cut mid-line: drawn without the cut line, with a warning naming it
n=$(wc -c <"$dir/t.txt")
head -c $((n - 7)) "$dir/t.txt" >"$dir/cut.txt"
"$pokelab" timeline "$dir/cut.txt" -o "$dir/cut.svg" >"$dir/cut.out" 2>"$dir/cut.err" ||
	fail "timeline of a cut trace failed"
lines=$(wc -l <"$dir/t.txt")
grep -q "^pokelab: timeline: warning: $dir/cut.txt: ends mid-line .*line $lines," "$dir/cut.err" ||
	fail "a trace cut mid-line: no warning naming its last line ($lines)"
exit 0
