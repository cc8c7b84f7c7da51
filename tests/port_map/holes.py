#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# holes.py ROOT UPSTREAM: every function or macro the port defines under the
# name of a definition in the reference tree's files (every file of it, not
# only those the Port-of lines name: a header the port cites wrongly or not
# at all is read too) must carry a Port-of line (or sit inside a definition that
# does), unless NOT_PORTS below says why it is pokelab's own under a kernel
# name. A ported function that loses its Port-of line fails this.

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools'))
from portlib import drift, kitems  # noqa: E402
from portlib.portmap import PortMap  # noqa: E402
from portlib.where import port_defs, covering  # noqa: E402

# Kernel names the port uses for something that is not a port of it: why.
NOT_PORTS = {
	'kernel_shim/kernel/smp.cpp:static_branch_unlikely':
		'a local stand-in over a plain bool for the CSD debug key, not the jump label',
	'kernel_shim/kernel/smp.cpp:static_branch_enable':
		'csdlock_debug=\'s store to that bool, not the jump label',
	'kernel_shim/kernel/smp.cpp:static_branch_disable':
		'csdlock_debug=\'s store to that bool, not the jump label',
	'module/unload.cpp:delete_module':
		'two definitions: the port of the system call, and pokelab\'s overload by module',
}


def kernel_files(upstream):
	"""Every C file and header of the reference tree, relative to it."""
	out = []
	for d, dirs, files in os.walk(upstream):
		dirs.sort()
		out += [os.path.relpath(os.path.join(d, f), upstream) for f in sorted(files)
			if f.endswith(('.c', '.h'))]
	return out


def main(root, upstream):
	if not os.path.isdir(upstream):
		print('port_map: skipped: no reference tree at %s' % upstream)
		return 77
	pm = PortMap(root)
	names = {}
	for rel in kernel_files(upstream):
		p = os.path.join(upstream, rel)
		if not os.path.isfile(p):
			continue
		for it in kitems.items(drift.Source(p, rel)):
			if it.kind in ('func', 'macro'):
				names.setdefault(it.name, rel)
	holes = []
	for name, places in sorted(port_defs(pm).items()):
		if name not in names:
			continue
		for src, d in places:
			if '%s:%s' % (src.rel, name) in NOT_PORTS:
				continue
			if src.rel.startswith(('tests/', 'tools/')):
				continue
			if covering(pm, src.rel, d.line) is None:
				holes.append('%s:%d: %s() has the name of a definition of %s but no Port-of '
					     'line' % (src.rel, d.line, name, names[name]))
	# structs, unions and enums: "struct NAME {" in the port under a kernel name
	tags = {}
	for rel in kernel_files(upstream):
		p = os.path.join(upstream, rel)
		if os.path.isfile(p):
			for it in kitems.items(drift.Source(p, rel)):
				if it.kind in ('struct', 'union', 'enum'):
					tags.setdefault(it.name, rel)
	ported = {e.name for e in pm.entries if e.kind in ('struct', 'union', 'enum')}
	for d, dirs, files in os.walk(root):
		dirs[:] = sorted(x for x in dirs if not x.startswith(('build', '.')) and
				 not (d == root and x in ('tests', 'tools')))
		for f in sorted(files):
			if not f.endswith(drift.SOURCE_EXT):
				continue
			path = os.path.join(d, f)
			with open(path, encoding='utf-8', errors='replace') as fh:
				text = fh.read()
			for m in re.finditer(r'^(?:typedef\s+)?(struct|union|enum)\s+(\w+)\s*(?::[^{;]*)?\{',
					     text, re.M):
				if m.group(2) in tags and m.group(2) not in ported:
					holes.append('%s:%d: %s %s has the name of a definition of %s but no '
						     'Port-of line' % (os.path.relpath(path, root),
								       text[:m.start()].count('\n') + 1,
								       m.group(1), m.group(2), tags[m.group(2)]))
	# a Port-of line naming a reference file that does not define the name, when
	# another reference file does: the map would send a kernel patch elsewhere
	where = {}
	for rel in kernel_files(upstream):
		for it in kitems.items(drift.Source(os.path.join(upstream, rel), rel)):
			where.setdefault(it.name.split(':')[-1], set()).add(rel)
	for e in pm.entries:
		if e.fragment or e.kind not in ('func', 'macro', 'struct', 'union', 'enum'):
			continue
		cited = [f for f in e.paths if os.path.isfile(os.path.join(upstream, f))]
		defs = where.get(e.name, set())
		if cited and defs and not defs & set(cited):
			holes.append('%s:%d: the Port-of line of %s names %s, which does not define it; '
				     '%s does' % (e.rel, e.line, e.name, ', '.join(cited),
						  ', '.join(sorted(defs))))
	for h in holes:
		print(h)
	print('port_map: %d kernel names and %d tags checked, %d holes' % (len(names), len(tags),
									  len(holes)))
	return 1 if holes else 0


if __name__ == '__main__':
	sys.exit(main(sys.argv[1], sys.argv[2]))
