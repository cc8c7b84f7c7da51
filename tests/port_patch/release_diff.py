#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# release_diff.py ROOT FROM TO FILE [FILE...]: the kernel-tree patch that turns
# each FILE of the tree FROM into TO's code, restricted to the functions the
# port at ROOT has (both trees must have them): FROM's file with those
# functions' text replaced by TO's, as `diff -u` would write it. Printed on
# stdout. Made at test time, so no kernel text is kept in the tree.

import difflib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools'))
from portlib import drift, kitems  # noqa: E402
from portlib.portmap import PortMap  # noqa: E402


def spans(src):
	out = {}
	for it in kitems.items(src):
		if it.kind == 'func':
			out.setdefault(it.name, []).append(it)
	return out


def main(root, old_tree, new_tree, files):
	pm = PortMap(root)
	for rel in files:
		with open(os.path.join(old_tree, rel)) as f:
			old = f.read()
		with open(os.path.join(new_tree, rel)) as f:
			new = f.read()
		osrc, nsrc = drift.Source(rel, rel, old), drift.Source(rel, rel, new)
		oi, ni = spans(osrc), spans(nsrc)
		ported = {e.name for e in pm.entries if rel in e.paths and e.kind == 'func'}
		lines = old.split('\n')
		nlines = new.split('\n')
		cuts = []
		called = set()
		for name in sorted(ported):
			if len(oi.get(name, [])) != 1 or len(ni.get(name, [])) != 1:
				continue
			a, b = oi[name][0], ni[name][0]
			if a.key == b.key:
				continue
			cuts.append((a.line, a.last_line, nlines[b.line - 1:b.last_line]))
			called |= {t.text for t in b.toks if t.kind == 'id'}
		# helpers TO's functions call that FROM has not: each goes in before the
		# next function the two trees share, as TO has it
		order = [it for it in kitems.items(nsrc) if it.kind == 'func']
		for k, it in enumerate(order):
			if it.name not in called or it.name in oi or len(ni.get(it.name, [])) != 1:
				continue
			nxt = next((x for x in order[k + 1:] if len(oi.get(x.name, [])) == 1), None)
			if nxt is None:
				continue
			at = oi[nxt.name][0].line
			cuts.append((at, at - 1, nlines[it.line - 1:it.last_line] + ['']))
		for lo, hi, repl in sorted(cuts, key=lambda c: (c[0], c[1]), reverse=True):
			lines[lo - 1:hi] = repl
		out = '\n'.join(lines)
		diff = difflib.unified_diff(old.splitlines(True), out.splitlines(True),
					    'a/' + rel, 'b/' + rel, n=3)
		sys.stdout.write(''.join(diff).replace('--- a/%s\t' % rel, '--- a/%s' % rel))


if __name__ == '__main__':
	main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
