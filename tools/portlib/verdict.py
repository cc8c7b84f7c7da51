# SPDX-License-Identifier: GPL-2.0-only
#
# port-patch --torture: rebuild what the patch changed, run torture with the
# options the touched rooms need, and print the verdict with each
# violation's port FILE:LINE and the hunk that changed that function.

import os
import re
import subprocess
import sys
import time

from .patchin import Bad
from .portmap import PortMap

# kernel file -> torture options its room needs (docs/porting.md, "port-patch --torture")
CT_ROOM = re.compile(r'kernel/context_tracking\.c|include/linux/context_tracking|kernel/entry/|'
		     r'arch/x86/mm/tlb\.c|mm/vmalloc\.c|include/linux/entry-common\.h')
CT_POLICIES = ['v7', 'v7-tlbi', 'v8']
ROOM_OPTIONS = [
	(CT_ROOM, ['--cpus', '4', '--nohz-full', '2-3']),
	(re.compile(r'kernel/module/|arch/x86/kernel/module\.c'),
	 ['--module', '{build}/tests/modules/pokelab_test_mod.o']),
]
MODULE_TARGETS = ['tests/modules/pokelab_test_mod.o', 'tests/modules/pokelab_provider_mod.o',
		  'tests/modules/pokelab_consumer_mod.o', 'tests/modules/pokelab_init_mod.o']


def ct_room(paths):
	return any(CT_ROOM.search(x) for x in paths)


def step(what, t0):
	print('port-patch: %s (%.1f s)' % (what, time.monotonic() - t0))
	sys.stdout.flush()


def run_cmd(cmd, cwd=None):
	return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def torture(args, target, session, patches):
	build = os.path.abspath(args.build or os.path.join(target, 'build'))
	t0 = time.monotonic()
	if not os.path.isfile(os.path.join(build, 'build.ninja')):
		p = run_cmd(['meson', 'setup', build], cwd=target)
		if p.returncode:
			sys.stdout.write(p.stdout[-3000:] + p.stderr[-3000:])
			raise Bad('meson setup %s failed (see above)' % build)
		step('set up %s' % build, t0)
		t0 = time.monotonic()
	paths = {fp.path for p in patches for fp in p.files}
	opts = []
	targets = ['tools/pokelab']
	for rx, o in ROOM_OPTIONS:
		if any(rx.search(x) for x in paths):
			opts += [x.format(build=build) for x in o]
			if '--module' in o:
				targets += MODULE_TARGETS
	p = run_cmd(['ninja', '-C', build] + targets)
	if p.returncode:
		sys.stdout.write(p.stdout[-6000:])
		print('port-patch: the patched port does not build (%.1f s); no verdict' %
		      (time.monotonic() - t0))
		return 1
	step('rebuilt pokelab%s in %s' % (' and the companion modules' if len(targets) > 1 else '',
					     build), t0)
	user = list(args.torture)
	if not any(a == '--duration' or a.startswith('--duration=') or a == '--ops' for a in user):
		user += ['--duration', '20']
	# the user's options win over the rooms' defaults
	given = {a.split('=')[0] for a in user if a.startswith('--')}
	merged, k = [], 0
	while k < len(opts):
		if opts[k] in given:
			k += 2
			continue
		merged += opts[k:k + 2]
		k += 2
	# context tracking and the TLB: one run per deferral policy of the series
	runs = [[]]
	if ct_room(paths) and '--ct-defer' not in given:
		runs = [['--ct-defer', p] for p in CT_POLICIES]
	rc, lines = 0, []
	for extra in runs:
		cmd = [os.path.join(build, 'tools', 'pokelab'), 'torture'] + merged + extra + user
		print('port-patch: $ %s' % ' '.join(cmd))
		sys.stdout.flush()
		t0 = time.monotonic()
		proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
		try:
			for line in proc.stdout:
				lines.append(line)
				sys.stdout.write(line)
				sys.stdout.flush()
			r = proc.wait()
		except KeyboardInterrupt:
			proc.terminate()
			proc.wait()
			raise
		step('torture ended, status %d' % r, t0)
		rc = max(rc, r)
		if r > 1:		# interrupted or bad input: no further run
			break
	explain(target, session, lines)
	if len(runs) > 1:
		print('port-patch: torture: %s over %d policies (%s)' % (
			'SUCCESS' if rc == 0 else 'FAILURE' if rc == 1 else 'status %d' % rc, len(runs),
			', '.join(x[1] for x in runs)))
	return rc


# the lockup detectors' reports (kernel_shim/watchdog.h) name port functions too
REPORTS = ('xmc:', 'watchdog:', 'lockdep:', 'rcu:', 'csd:', 'INFO: task ')


def is_report(line):
	"""A line of a model violation or a lockup report (not the model's summary)."""
	return line.startswith(REPORTS) and not line.startswith('xmc: model of')


def explain(target, session, lines):
	"""Each violation's function: the port's FILE:LINE, and the hunk that changed it."""
	pm = PortMap(target)
	changed = {}
	for name, rel, line, h in session.changed:
		changed.setdefault(name, []).append((rel, line, h))
	names = {e.name for e in pm.entries}
	named = []
	for line in lines:
		if not is_report(line):
			continue
		for m in re.finditer(r'[A-Za-z_]\w*', line):
			if m.group() in names and m.group() not in named:
				named.append(m.group())
	violations = any(is_report(l) for l in lines)
	if not violations:
		for name in changed:
			for rel, line, h in changed[name]:
				print('port-patch: changed %s() at %s:%d (%s)' % (name, rel, line, h.name()))
		return
	print('port-patch: the violations, in the port:')
	for name in named:
		es = pm.find(name, 'func')
		where = es[0].where() if es else 'no port definition of that name'
		hunks = changed.get(name)
		if hunks:
			for rel, line, h in hunks:
				print('  %s(): %s; changed by %s, now at %s:%d' % (name, where, h.name(), rel,
										    line))
		else:
			print('  %s(): %s; no hunk changed it' % (name, where))
	rest = [n for n in changed if n not in named]
	for name in rest:
		for rel, line, h in changed[name]:
			print('  changed and not named by a violation: %s() at %s:%d (%s)' % (
				name, rel, line, h.name()))
