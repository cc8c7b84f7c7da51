# SPDX-License-Identifier: GPL-2.0-only
#
# port-where: the kernel definition NAME -> the port's FILE:LINE, the kernel
# file and version it ports, and its drift verdict; a port symbol or
# FILE:LINE -> the kernel definition it ports (or that it is pokelab's own).

import difflib
import os
import re
import sys

from . import clihelp
from . import drift
from .portmap import PortMap, default_upstream

USAGE = 'pokelab where [--upstream DIR] [--root DIR] [--brief] NAME|FILE:LINE...'


class Bad(Exception):
	pass


def verdict(pm, e, tree):
	"""port-drift's verdict for a function entry against tree, or None."""
	if tree is None or e.kind != 'func' or e.fragment:
		return None
	for p in pm.ports:
		if p.src is e.src and p.line == e.comment:
			row = drift.Row(e.name, drift.Def(e.src, e.name, e.start, e.end, 'func'), p)
			spots = drift.mark_units(row.pdef)
			keys = drift.port_keys(row.pdef.units(), drift.renames_for(pm.renames, e.name))
			return str(drift.judge(row, tree, spots, keys))
	return None


def describe(pm, e, tree):
	what = {'func': '%s()' % e.name, 'macro': e.name, 'decl': e.name}.get(e.kind,
									 '%s %s' % (e.kind, e.name))
	s = '%s: %s, port of %s%s' % (what, e.where(), ', '.join(e.paths),
				     '' if e.claim == '-' else ' (%s)' % e.claim)
	if e.fragment:
		s += '; a part of it kept in the helper %s()' % e.defname()
	v = verdict(pm, e, tree)
	if v:
		s += '; drift against %s: %s' % (tree.version, v)
	return s


def port_defs(pm):
	"""Every function and macro defined in the port tree: {name: [(src, Def)]}."""
	out = {}
	seen = set()
	for root, dirs, files in os.walk(pm.root):
		dirs[:] = sorted(d for d in dirs if d not in drift.SKIP_DIRS and not d.startswith('build')
				 and not d.startswith('.') and
				 not os.path.exists(os.path.join(root, d, 'meson-private')))
		if drift.IGNORE_MARK in files:
			dirs[:] = []
			continue
		for f in sorted(files):
			if not f.endswith(drift.SOURCE_EXT):
				continue
			p = os.path.join(root, f)
			rel = os.path.relpath(p, pm.root)
			src = next((e.src for e in pm.entries if e.rel == rel), None) or \
				drift.Source(p, rel)
			if rel in seen:
				continue
			seen.add(rel)
			for d in drift.find_defs(src, lambda x: True):
				if d.kind in ('func', 'macro'):
					out.setdefault(d.name, []).append((src, d))
	return out


def covering(pm, rel, line):
	for e in pm.entries:
		if e.rel == rel and e.src.toks[e.start].line <= line <= e.src.toks[e.end].line:
			return e
	return None


def main(argv):
	ap = clihelp.Parser('where', USAGE, 'Where the port keeps a kernel definition, and the '
			    'reverse (exit 1 when a name has no port)')
	ap.positional('names', 'name', 'TEXT', 'A kernel function, struct or macro; a port symbol; or '
		      'FILE:LINE')
	ap.add_argument('--upstream', metavar='DIR', help='The kernel tree for the drift verdict '
			'(default: $POKELAB_UPSTREAM, else ../shared/reference/upstream/7.3)')
	ap.add_argument('--root', metavar='DIR', help='The pokelab checkout (default: the one '
			'this command is in)')
	ap.add_argument('--brief', action='store_true', help='FILE:LINE alone, one per name')
	args = ap.parse_args(argv)
	if not args.names:
		raise Bad('no NAME given; expected %s' % USAGE)
	root = args.root or os.path.dirname(os.path.dirname(os.path.dirname(
		os.path.abspath(__file__))))
	if not os.path.isfile(os.path.join(root, 'tools', 'port-drift')):
		raise Bad('--root %s: not a pokelab checkout; expected --root DIR, a pokelab '
			  'checkout' % root)
	pm = PortMap(root)
	up = args.upstream or default_upstream(root)
	if args.upstream and not os.path.isdir(args.upstream):
		raise Bad('--upstream %s: %s; expected --upstream DIR, a Linux 7.3 tree' % (
			args.upstream, 'not a directory' if os.path.exists(args.upstream) else
			'no such directory'))
	tree = drift.Tree(up) if up and not args.brief else None
	status = 0
	defs = None
	for raw in args.names:
		name = raw.strip()
		m = re.fullmatch(r'(.+):(\d+)', name)
		if m and os.path.isfile(os.path.join(root, m.group(1))):
			with open(os.path.join(root, m.group(1)), 'rb') as f:
				nlines = f.read().count(b'\n')
			if not 1 <= int(m.group(2)) <= nlines:
				raise Bad('%s: line %s is not in %s (lines 1 to %d); expected FILE:LINE '
					  'with a line of the file' % (name, m.group(2), m.group(1), nlines))
			e = covering(pm, m.group(1), int(m.group(2)))
			if e:
				print('%s: in %s' % (name, describe(pm, e, tree)))
			else:
				print('%s: pokelab\'s own code, no Port-of line covers it' % name)
			continue
		name = re.sub(r'^(struct|union|enum)\s+', '', name).rstrip('()')
		found = [e for e in pm.entries if e.name == name]
		if found:
			for e in found:
				print(e.where() if args.brief else describe(pm, e, tree))
			continue
		if defs is None:
			defs = port_defs(pm)
		if name in defs:
			for src, d in defs[name]:
				e = covering(pm, src.rel, d.line)
				if e and e.name != name:
					print('%s(): %s:%d, port code inside %s' % (
						name, src.rel, d.line, describe(pm, e, tree)))
				else:
					print('%s(): %s:%d, pokelab\'s own (no Port-of line: not a port of a '
					      'kernel definition)' % (name, src.rel, d.line))
			continue
		names = sorted({e.name for e in pm.entries} | set(defs))
		near = difflib.get_close_matches(name, names, n=4, cutoff=0.6)
		# a result, not a usage error (exit 1), but a miss: on stderr, as pokelab says one
		sys.stdout.flush()
		print('pokelab: where: %s: not in the port (no kernel definition of that name has a '
		      'port, and the port defines no such symbol%s)' %
		      (raw, '; near: ' + ', '.join(near) if near else ''), file=sys.stderr)
		status = 1
	return status


def run(argv):
	try:
		sys.exit(main(argv))
	except (Bad, clihelp.Usage, drift.Usage) as e:
		clihelp.report('where', e)
	except BrokenPipeError:
		sys.exit(0)
	except KeyboardInterrupt:
		sys.stderr.write('pokelab: where: interrupted\n')
		sys.exit(130)
