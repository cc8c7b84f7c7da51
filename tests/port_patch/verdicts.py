#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# verdicts.py ROOT UPSTREAM WORKDIR [SEEDS [CASE,...]]: each case of cases.py that names
# a verdict, through `pokelab port-patch --torture --duration 20 --seed S`, in
# one git worktree of ROOT (built once, restored between cases), for each
# seed: correct patches must end in SUCCESS, wrong ones in FAILURE with an
# xmc: report whose "port:" line names the port's FILE:LINE. Outside the
# default suite (meson test --setup portpatch --suite portpatch): it
# builds a tree and runs a torture per case and seed.

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

ROOT, UP, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
SEEDS = [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else '1,2,3').split(',')]
ONLY = set(sys.argv[5].split(',')) if len(sys.argv) > 5 else None
failures = []


def sh(cmd, cwd=None, **kw):
	return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)


def main():
	wt = os.path.join(WORK, 'tree')
	if not os.path.isdir(wt):
		p = sh(['git', '-C', ROOT, 'worktree', 'add', '--detach', '-q', wt])
		if p.returncode:
			print('git worktree add failed: ' + p.stderr)
			return 1
	t0 = time.monotonic()
	if not os.path.isfile(os.path.join(wt, 'build', 'build.ninja')):
		sh(['meson', 'setup', 'build'], cwd=wt)
	p = sh(['ninja', '-C', 'build', 'tools/pokelab'], cwd=wt)
	if p.returncode:
		print(p.stdout[-3000:])
		return 1
	print('worktree %s built (%.0f s)' % (wt, time.monotonic() - t0))
	pokelab = os.path.join(wt, 'build', 'tools', 'pokelab')
	for c in cases.CASES:
		if not c.verdict or (ONLY and c.name not in ONLY):
			continue
		patch = cases.make(c, UP, os.path.join(WORK, 'k'), os.path.join(WORK, c.name + '.patch'))
		for seed in SEEDS:
			t0 = time.monotonic()
			p = sh([pokelab, 'port-patch', '--upstream', UP, patch, '--torture', '--duration',
				'20', '--seed', str(seed)], cwd=wt, timeout=600)
			secs = time.monotonic() - t0
			out = p.stdout + p.stderr
			sh(['git', 'checkout', '-q', '--', '.'], cwd=wt)
			got = 'SUCCESS' if 'torture: SUCCESS' in out else \
				'FAILURE' if 'torture: FAILURE' in out else 'none'
			port = re.search(r'^  port: (\S+) at (\S+:\d+)', out, re.M)
			ok = got == c.verdict and (c.verdict == 'SUCCESS' or port)
			print('%-22s seed %d: %s%s, exit %d, %.0f s%s' % (
				c.name, seed, got, ' (xmc: %s at %s)' % port.groups() if port else '',
				p.returncode, secs, '' if ok else '  <- want ' + c.verdict))
			if not ok:
				failures.append((c.name, seed, out[-2000:]))
	for name, seed, out in failures:
		print('--- %s seed %d:\n%s' % (name, seed, out))
	print('port-patch verdicts: %d wrong' % len(failures))
	return 1 if failures else 0


if __name__ == '__main__':
	sys.exit(main())
