#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# run.py PORT_DRIFT FIXTURES: tools/port-drift on the fixture trees here.
#
# port/ is a tiny port tree (Port-of comments, userspace: markers of each
# kind, renames, one real drift, one comment tied to no function);
# upstream/new/ is "9.1" (its Makefile says so), upstream/9.0/ has no
# Makefile. Each function's verdicts are fixed below, and so are the wrong
# verdicts a careless reading would give; bad input must exit 2 with one line.

import os
import re
import shutil
import subprocess
import sys
import tempfile

TOOL, HERE = sys.argv[1], sys.argv[2]
PORT = os.path.join(HERE, 'port')
NEW = os.path.join(HERE, 'upstream', 'new')
OLD = os.path.join(HERE, 'upstream', '9.0')
failures = []

# function -> (port file:line's file, verdict against 9.0, verdict against 9.1)
EXPECT = {
	'widget_count()': ('src/widget.cpp', 'matches', 'matches'),
	'widget_reset()': ('src/widget.cpp', 'matches', 'matches'),
	'widget_poke()': ('src/widget.cpp', 'not in upstream',
			  'matches (4 marked deviations; 7 of 9 statements matched, 2 absorbed)'),
	'widget_ready()': ('src/widget.cpp', 'matches', 'differs (2 lines)'),
	'widget_drain()': ('src/widget.cpp', 'not in upstream', 'differs (3 lines)'),
	'widget_flush()': ('src/widget.cpp', 'not in upstream', 'matches'),
	'widget_find()': ('src/widget.cpp', 'not in upstream', 'matches'),
	'widget_legacy()': ('src/widget.cpp', 'matches', 'not in upstream'),
	'widget_lock_all()': ('src/widget.cpp', 'not in upstream', 'matches'),
	'widget_unlock_all()': ('src/widget.cpp', 'not in upstream',
				'matches (1 marked deviation; 3 of 3 statements matched, 0 absorbed)'),
	# one marked hunk that replaces 5 of the 8 upstream statements: no "matches"
	'widget_map()': ('src/widget.cpp', 'not in upstream',
			 'deviates (1 marked deviation; 3 of 8 statements matched, 5 absorbed)'),
	'widget_put()': ('src/widget.cpp', 'not in upstream', 'differs (1 line)'),
	'widget_kick()': ('src/widget.cpp', 'not in upstream', 'differs (3 lines)'),
	'WIDGET_CHECK()': ('src/widget.cpp', 'not in upstream', 'matches'),
	'widget_busy()': ('src/widget.h', 'no file', 'matches'),
	# a posted series' line, marked "series vN a/b:", is a marked deviation
	'widget_wake()': ('src/widget.cpp', 'not in upstream',
			  'matches (1 marked deviation; 3 of 3 statements matched, 0 absorbed)'),
	# a function a posted series adds is no drift: the verdict says why
	'widget_defer()': ('src/widget.cpp', 'not in upstream (posted series)',
			   'not in upstream (posted series)'),
	'widget_old_lock()': ('src/widget.cpp', 'not in upstream', 'not in upstream'),
}
# What a tool that misreads the rules would say instead; never these.
WRONG = {
	# the drift: 9.1 added "&& !w->busy"
	('widget_ready()', '9.1'): r'^matches',
	# a standalone marker followed by a blank line marks no statement
	('widget_drain()', '9.1'): r'^matches',
	# an upstream line left out with no userspace: comment at the spot
	('widget_put()', '9.1'): r'^matches',
	# a trailing marker marks its own line, not the if's body
	('widget_kick()', '9.1'): r'^matches',
	# removed upstream is not the same as a file the tree lacks
	('widget_legacy()', '9.1'): r'^no file',
	('widget_busy()', '9.0'): r'^not in upstream',
	# the #ifdef form the port follows, not the empty stub
	('widget_flush()', '9.1'): r'^differs',
	# a function no tree has and no series claims is not excused
	('widget_old_lock()', '9.1'): r'posted series',
	# a marked hunk that absorbs most of the body is not a match
	('widget_map()', '9.1'): r'^matches',
}


def fail(msg):
	failures.append(msg)
	print('FAIL: ' + msg)


def run(*args, root=PORT):
	cmd = [sys.executable, TOOL] + (['--root', root] if root else []) + list(args)
	p = subprocess.run(cmd, capture_output=True, text=True)
	return p.returncode, p.stdout, p.stderr


def table(out):
	"""{function: {column: cell}}, and the columns, from the tool's table."""
	lines = [l for l in out.split('\n') if l.startswith('| ')]
	head = [c.strip() for c in lines[0].strip('|').split('|')]
	rows = {}
	for l in lines[1:]:
		cells = [c.strip() for c in l.strip('|').split('|')]
		rows[cells[0]] = dict(zip(head, cells))
	return head, rows


rc, out, err = run('--upstream', OLD, '--upstream', NEW, '--diff')
if rc != 0 or err:
	fail('fixture run: exit %d, stderr %r' % (rc, err))
head, rows = table(out)
if head[4:] != ['9.0', '9.1']:
	fail('tree columns %r, want 9.0 (directory name) and 9.1 (Makefile)' % head[4:])
for name, (path, v90, v91) in EXPECT.items():
	r = rows.get(name)
	if r is None:
		fail('%s: no row' % name)
		continue
	if not r['port'].startswith(path + ':'):
		fail('%s: port %s, want %s:LINE' % (name, r['port'], path))
	for col, want in (('9.0', v90), ('9.1', v91)):
		if r.get(col) != want:
			fail('%s against %s: %r, want %r' % (name, col, r.get(col), want))
for (name, col), bad in WRONG.items():
	if name in rows and re.search(bad, rows[name].get(col, '')):
		fail('%s against %s: %r, the misreading this test guards against' %
		     (name, col, rows[name][col]))
extra = set(rows) - set(EXPECT)
if extra:
	fail('rows for %s, which no comment ties' % sorted(extra))
if rows.get('widget_ready()', {}).get('claims') != 'v9.0':
	fail('widget_ready(): claimed version %r, want v9.0' % rows.get('widget_ready()'))

# The comment tied to no function is listed, not skipped.
m = re.search(r'^unparsed: .*\((\d+)\):\n((?:  .*\n)*)', out, re.M)
if not m or m.group(1) != '1' or 'src/widget.cpp:134: names no function' not in m.group(2):
	fail('unparsed list: %r, want src/widget.cpp:134 alone' % (m.group(0) if m else None))

# --diff: the drifting lines, port (-) against upstream (+); marked hunks say so.
for want in ('--- port  src/widget.cpp:44 widget_ready()',
	     '- return READ_ONCE(w->state) == WIDGET_READY;',
	     '+ return READ_ONCE(w->state) == WIDGET_READY && !w->busy;',
	     '~ fixture_trace(w);', '- widget_sync_now(w);', '+ WIDGET_CHECK(w);'):
	if want not in out.split('\n'):
		fail('--diff: no line %r' % want)
if not re.search(r'^@@ .* @@ marked \(userspace:\)$', out, re.M):
	fail('--diff: no hunk shown as marked')
if re.search(r'^--- port .* widget_(poke|count)\(\)$', out, re.M):
	fail('--diff: shows a function that matches')

# LABEL=DIR names a tree without a Makefile; a Makefile's version wins.
rc, out, err = run('--upstream', 'old=' + OLD, '--upstream', 'x=' + NEW)
head, _ = table(out) if rc == 0 else ([], {})
if rc != 0 or head[4:] != ['old', '9.1']:
	fail('LABEL=DIR: exit %d, columns %r, want old and 9.1' % (rc, head[4:]))

# --function: one row.
rc, out, err = run('--upstream', NEW, '--function', 'widget_ready')
_, rows = table(out) if rc == 0 else ([], {})
if rc != 0 or list(rows) != ['widget_ready()']:
	fail('--function widget_ready: exit %d, rows %r' % (rc, list(rows)))

# The rules bite: with the marker's word changed, the marked line is drift.
with tempfile.TemporaryDirectory() as tmp:
	root = os.path.join(tmp, 'port')
	shutil.copytree(PORT, root)
	src = os.path.join(root, 'src', 'widget.cpp')
	with open(src) as f:
		text = f.read()
	text = text.replace('/* userspace: the kernel\'s unlock, but counted */',
			    '/* the kernel\'s unlock, but counted */')
	with open(src, 'w') as f:
		f.write(text)
	rc, out, err = run('--upstream', NEW, '--function', 'widget_unlock_all', root=root)
	_, rows = table(out) if rc == 0 else ([], {})
	got = rows.get('widget_unlock_all()', {}).get('9.1')
	if got != 'differs (1 line)':
		fail('unmarked widget_unlocks++: %r, want differs (1 line)' % got)

# Bad input: exit 2, one line naming the bad value, no traceback.
for args, root, word in (
		(['--upstream', '/nonexistent/tree'], PORT, '/nonexistent/tree'),
		(['--upstream', PORT], PORT, PORT),
		(['--upstream', NEW, '--bogus'], PORT, '--bogus'),
		(['--diff'], PORT, '--upstream'),
		(['--upstream', NEW, '--function', 'nosuch'], PORT, 'nosuch'),
		(['--upstream', NEW], '/nonexistent/root', '/nonexistent/root')):
	rc, out, err = run(*args, root=root)
	lines = err.strip().split('\n')
	if rc != 2 or len(lines) != 1 or word not in err or 'Traceback' in err or out:
		fail('%s: exit %d, stderr %r; want exit 2 and one line naming %s' %
		     (' '.join(args), rc, err, word))
	elif not re.search(r'want|usage', err):
		fail('%s: %r says nothing of the accepted form' % (' '.join(args), err))

if failures:
	print('port_drift: %d check(s) failed' % len(failures))
	sys.exit(1)
print('port_drift: every verdict, the unparsed list, --diff and bad input as expected')
