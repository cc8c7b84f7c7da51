#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# series_time.py ROOT UPSTREAM OLD [N]: the time port-patch takes to apply an
# N-patch series (default 30) written as an mbox, as `b4 am` would give it.
# The series is made here: each hunk of the release change OLD <- 7.3 of
# kernel/jump_label.c, kernel/static_call_inline.c, kernel/context_tracking.c,
# kernel/smp.c and arch/x86/kernel/alternative.c that the port takes is a patch
# of its own, and comment edits of alternative.c fill it up to N. Applied to a copy
# of the tree; prints the tool's wall time (median of 3) and its summary.

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT, UP, OLD = sys.argv[1], sys.argv[2], sys.argv[3]
N = int(sys.argv[4]) if len(sys.argv) > 4 else 30
TOOL = os.path.join(ROOT, 'tools', 'port-patch')


def hunks_of(diff):
	head, hunks = [], []
	for line in diff.splitlines(True):
		if line.startswith('@@'):
			hunks.append([line])
		elif hunks:
			hunks[-1].append(line)
		else:
			head.append(line)
	return ''.join(head), [''.join(h) for h in hunks]


def main():
	tmp = tempfile.mkdtemp(prefix='port-patch-series.')
	try:
		patches = []
		for rel in ['kernel/jump_label.c', 'kernel/static_call_inline.c',
			    'kernel/context_tracking.c', 'kernel/smp.c', 'arch/x86/kernel/alternative.c']:
			d = subprocess.run(['/usr/bin/python3', os.path.join(HERE, 'release_diff.py'), ROOT,
					    UP, OLD, rel], capture_output=True, text=True, check=True).stdout
			head, hs = hunks_of(d)
			# apply_alternatives()' rewrite is a conflict (the port is 7.3's form)
			patches += [head + h for h in hs if 'analyze_patch_site(&ps' not in h]
		# comment edits: each a patch of one comment line of alternative.c
		with open(os.path.join(UP, 'arch/x86/kernel/alternative.c')) as f:
			alt = f.read().split('\n')
		k = 0
		import difflib
		cur = list(alt)
		while len(patches) < N and k < len(cur):
			if re.match(r'\t \* [a-z]', cur[k]) and ' the ' in cur[k]:
				new = list(cur)
				new[k] = cur[k].replace(' the ', ' the the ', 1)
				d = ''.join(difflib.unified_diff([l + '\n' for l in cur], [l + '\n' for l in new],
								 'a/arch/x86/kernel/alternative.c',
								 'b/arch/x86/kernel/alternative.c', n=3))
				patches.append(d)
				cur = new
				k += 15
			k += 1
		patches = patches[:N]
		mbox = os.path.join(tmp, 'series.mbx')
		with open(mbox, 'w') as f:
			for i, p in enumerate(patches):
				f.write('From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
					'From: Bench <bench@example.org>\nSubject: [PATCH %d/%d] bench: step %d\n\n'
					'Step.\n---\n%s-- \n2.39.2\n\n' % (i + 1, len(patches), i + 1, p))
		times, last = [], ''
		for _ in range(3):
			tree = os.path.join(tmp, 'tree')
			shutil.rmtree(tree, ignore_errors=True)
			files = subprocess.run(['git', '-C', ROOT, 'ls-files'], capture_output=True,
					       text=True, check=True).stdout.split('\n')
			for fl in files:
				if fl and os.path.isfile(os.path.join(ROOT, fl)):
					os.makedirs(os.path.dirname(os.path.join(tree, fl)), exist_ok=True)
					shutil.copy2(os.path.join(ROOT, fl), os.path.join(tree, fl))
			t0 = time.monotonic()
			p = subprocess.run(['/usr/bin/python3', TOOL, '--root', tree, '--upstream', UP, mbox],
					   capture_output=True, text=True)
			times.append(time.monotonic() - t0)
			last = p.stdout.strip().split('\n')[-1] + p.stderr
			if p.returncode:
				print(p.stdout + p.stderr)
				return 1
		print('series: %d patches, %d hunks; port-patch wall time median %.2f s (%s)' % (
			len(patches), sum(p.count('\n@@') for p in patches),
			statistics.median(times), ', '.join('%.2f' % t for t in times)))
		print(last)
		return 0
	finally:
		shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
	sys.exit(main())
