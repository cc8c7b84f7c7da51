#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
#
# run.py ROOT UPSTREAM OLD [BUILD]: tools/port-patch on kernel-tree patches made
# here at test time from the reference trees (an edit script and a diff, so
# no kernel text is kept in the tree):
#
#  1. the release change: the diff OLD -> 7.3 taken back (7.3 -> OLD) for
#     kernel/jump_label.c, kernel/static_call_inline.c,
#     kernel/context_tracking.c and kernel/smp.c, restricted to the functions the port has,
#     applied to a copy of the tree: port-drift then reads those functions
#     as OLD's, the changed files compile (-fsyntax-only, BUILD's flags), and
#     -R gives back the tree byte for byte;
#  2. CASES: each patch's placement (applied at which port function, or
#     comment-only, not in the port, absorbed, a conflict) and exit status;
#  3. bad input: one line on stderr naming it, exit 2, nothing written.

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases  # noqa: E402

ROOT, UP, OLD = sys.argv[1], sys.argv[2], sys.argv[3]
BUILD = sys.argv[4] if len(sys.argv) > 4 else None
TOOL = os.path.join(ROOT, 'tools', 'port-patch')
failures = []


def fail(msg):
	failures.append(msg)
	print('FAIL: ' + msg)


def copy_tree(dst):
	files = subprocess.run(['git', '-C', ROOT, 'ls-files', '-co', '--exclude-standard'],
			       capture_output=True, text=True, check=True).stdout.split('\n')
	for f in files:
		if not f or f.startswith('build'):
			continue
		s = os.path.join(ROOT, f)
		if not os.path.isfile(s):
			continue
		d = os.path.join(dst, f)
		os.makedirs(os.path.dirname(d), exist_ok=True)
		shutil.copy2(s, d)
	return dst


def tool(root, *args):
	p = subprocess.run(['/usr/bin/python3', TOOL, '--root', root, '--upstream', UP] +
			   list(args), capture_output=True, text=True)
	return p.returncode, p.stdout, p.stderr


def snapshot(root):
	out = {}
	for d, dirs, fs in os.walk(root):
		dirs[:] = [x for x in dirs if x != '.git']	# -R's record lives there
		for f in fs:
			p = os.path.join(d, f)
			with open(p, 'rb') as fh:
				out[os.path.relpath(p, root)] = fh.read()
	return out


def syntax_check(root, rels):
	"""Compile each changed file with its flags from BUILD, -fsyntax-only; the
	files that did not compile."""
	bad = []
	if not BUILD or not os.path.isfile(os.path.join(BUILD, 'compile_commands.json')):
		print('note: no compile_commands.json in %s: the compile check is skipped' % BUILD)
		return bad
	with open(os.path.join(BUILD, 'compile_commands.json')) as f:
		db = json.load(f)
	for rel in rels:
		src = os.path.join(os.path.abspath(ROOT), rel)
		cmd = next((c for c in db if os.path.normpath(os.path.join(c['directory'], c['file']))
			    == os.path.normpath(src)), None)
		if cmd is None:
			fail('%s: not in compile_commands.json' % rel)
			continue
		args = cmd['command'].split()
		args = [a for a in args if a not in ('-MD', '-MQ', '-MF', '-o', '-c')]
		out = []
		skip = False
		for a in cmd['command'].split():
			if skip:
				skip = False
				continue
			if a in ('-MQ', '-MF', '-o'):
				skip = True
				continue
			if a in ('-MD', '-c'):
				continue
			out.append(a)
		out = [os.path.join(root, rel) if os.path.normpath(os.path.join(cmd['directory'], a))
		       == os.path.normpath(src) else a for a in out]
		# includes of the tree copy first, so the patched headers are read
		# (after the compiler and its launcher, ccache where meson found one)
		first_flag = next((k for k, a in enumerate(out) if a.startswith('-')), len(out))
		out.insert(first_flag, '-iquote' + os.path.dirname(os.path.join(root, rel)))
		p = subprocess.run(out + ['-fsyntax-only', '-fdiagnostics-color=never'],
				   cwd=cmd['directory'],
				   capture_output=True, text=True)
		if p.returncode:
			# userspace C++ takes kernel C only where C++ accepts it: the old
			# release's kzalloc() results uncast, helpers the shim lacks
			errs = [l for l in p.stderr.split('\n') if 'error:' in l]
			print('note: %s does not compile after the release patch (%d errors, e.g. %s)'
			      % (rel, len(errs), errs[0].split('error:')[-1].strip()[:90] if errs else '?'))
			bad.append(rel)
	return bad


def release_patch(tmp, files, name):
	patch = os.path.join(tmp, name)
	p = subprocess.run(['/usr/bin/python3', os.path.join(HERE, 'release_diff.py'), ROOT, UP,
			    OLD] + files, capture_output=True, text=True)
	if p.returncode or '@@' not in p.stdout:
		fail('release_diff.py made no patch: %s' % p.stderr)
		return None
	with open(patch, 'w') as f:
		f.write(p.stdout)
	return patch


def unchanged(root, before, what):
	back = snapshot(root)
	diff = sorted(k for k in set(back) | set(before) if back.get(k) != before.get(k))
	if diff:
		fail('%s did not give the tree back byte for byte: %s' % (what, ', '.join(diff)))


def release(tmp):
	root = copy_tree(os.path.join(tmp, 'tree'))
	git = ['git', '-C', root, '-c', 'user.name=t', '-c', 'user.email=t@localhost']
	subprocess.run(git[:3] + ['init', '-q'], check=True)
	before = snapshot(root)
	files = ['kernel/jump_label.c', 'kernel/static_call_inline.c', 'kernel/context_tracking.c',
		 'kernel/smp.c', 'arch/x86/kernel/alternative.c']
	patch = release_patch(tmp, files, 'release.patch')
	if not patch:
		return
	# the functions that already drift from 7.3 (unmarked lines) drift from OLD after
	drift0 = subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tools', 'port-drift'),
				 '--root', root, '--upstream', UP], capture_output=True, text=True)
	drifted = set()
	for line in drift0.stdout.split('\n'):
		cells = [c.strip() for c in line.strip('|').split('|')]
		if len(cells) >= 5 and cells[4].startswith('differs'):
			drifted.add(cells[0].rstrip('()'))
	rc, out, err = tool(root, patch)
	if rc != 0:
		fail('the release patch (%s -> 7.3, taken back) did not apply: %s%s' % (OLD, out, err))
		return
	after = snapshot(root)
	changed = sorted(k for k in after if after[k] != before.get(k))
	print('release patch: %d hunks placed, %d files changed: %s' % (
		out.count(': applied at'), len(changed), ', '.join(changed)))
	drift = subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tools', 'port-drift'),
				'--root', root, '--upstream', OLD], capture_output=True, text=True)
	placed = set(re.findall(r'applied at \S+ \((\w+)\(\)\)', out))
	for line in drift.stdout.split('\n'):
		cells = [c.strip() for c in line.strip('|').split('|')]
		if len(cells) >= 5 and cells[0].rstrip('()') in placed - drifted and \
				cells[4].startswith('differs'):
			fail('after the release patch, %s reads %s against %s' % (cells[0], cells[4], OLD))
	# alternative.c's 6.17 text needs 6.17's text-patching.h (int3_emulate_call()'s
	# arity), which the reference trees lack, and helpers the port dropped
	# (docs/porting.md, the release change): every other file must compile
	# (not compiled at all: their result would be read by nothing)
	known = {'alternative/alternative.cpp', 'alternative/apply_alternatives.cpp'}
	for rel in syntax_check(root, [c for c in changed
				       if c.endswith(('.cpp', '.h')) and c not in known]):
		fail('%s does not compile after the release patch' % rel)
	# -R of the same patch: the tree as it was, from the record port-patch kept
	rc, out, err = tool(root, '-R', patch)
	if rc != 0 or 'byte for byte' not in out:
		fail('-R of the release patch: exit %d, %s%s' % (rc, out[-300:], err))
	unchanged(root, before, '-R of the release patch')
	# without the record, -R merges: byte for byte where the port's lines are the
	# kernel's (these three files; smp.c moves a statement past a comment)
	merge = release_patch(tmp, files[:3], 'release3.patch')
	rc1, out1, err1 = tool(root, '--no-record', merge)
	rc2, out2, err2 = tool(root, '--no-record', '-R', merge)
	if rc1 or rc2:
		fail('the merge round trip: exit %d/%d: %s%s' % (rc1, rc2, err1, err2))
	unchanged(root, before, '-R by merging')
	# a hunk that replaced a marked port line (the series' deferrable sync)
	c = [x for x in cases.CASES if x.name == 'no-sync-3'][0]
	p2 = cases.make(c, UP, os.path.join(tmp, 'kr'), os.path.join(tmp, 'record.patch'))
	rc1, out1, err1 = tool(root, p2)
	rc2, out2, err2 = tool(root, '-R', p2)
	if rc1 or rc2 or 'byte for byte' not in out2:
		fail('-R from the record: exit %d/%d, %s' % (rc1, rc2, (out2 + err2).strip()[-300:]))
	unchanged(root, before, '-R from the record')
	# applied twice (the record says port-patch applied it and the files are still as
	# it left them), and -R of a patch never applied (the port reads as the kernel
	# without it): both refused, exit 1, nothing written
	c = [x for x in cases.CASES if x.name == 'no-sync-2'][0]
	p3 = cases.make(c, UP, os.path.join(tmp, 'kt'), os.path.join(tmp, 'twice.patch'))
	rc, out, err = tool(root, '-R', p3)
	if rc != 1 or 'not applied at alternative/alternative.cpp' not in out:
		fail('-R of a patch never applied: exit %d, %s' % (rc, (out + err).strip()[-300:]))
	unchanged(root, before, '-R of a patch never applied')
	rc1, out1, err1 = tool(root, p3)
	once = snapshot(root)
	rc2, out2, err2 = tool(root, p3)
	if rc1 or rc2 != 1 or 'already applied' not in out2:
		fail('a patch applied twice: exit %d/%d, %s' % (rc1, rc2, (out2 + err2).strip()[-300:]))
	if snapshot(root) != once:
		fail('a patch applied twice: the second run wrote to the tree')
	tool(root, '-R', p3)
	unchanged(root, before, '-R after a patch applied twice')


def run_cases(tmp, part=0, parts=1):
	root = copy_tree(os.path.join(tmp, 'cases%d' % part))
	git = ['git', '-C', root, '-c', 'user.name=t', '-c', 'user.email=t@localhost']
	subprocess.run(git[:3] + ['init', '-q'], check=True)
	subprocess.run(git + ['add', '-A'], check=True)
	subprocess.run(git + ['commit', '-q', '-m', 'copy'], check=True)
	before = snapshot(root)
	for c in cases.CASES[part::parts]:
		patch = cases.make(c, UP, os.path.join(tmp, 'k%d' % part),
				   os.path.join(tmp, c.name + '.patch'))
		rc, out, err = tool(root, '--check', patch)
		want = c.status
		if rc != want:
			fail('%s: exit %d, want %d: %s%s' % (c.name, rc, want, out, err))
			continue
		for w in c.expect:
			if w not in out + err:
				fail('%s: %r not in its output:\n%s%s' % (c.name, w, out, err))
		print('case %s: %s' % (c.name, (out + err).strip().split('\n')[-1][:100]))
		if snapshot(root) != before:
			fail('%s: --check wrote to the tree' % c.name)
		if (c.lines is None and not c.written) or rc:
			continue
		# written: exactly the lines the kernel change stands for, nothing else
		rc, out, err = tool(root, patch)
		stat = subprocess.run(git + ['diff', '--numstat'], capture_output=True, text=True).stdout
		added = sum(int(l.split()[0]) for l in stat.split('\n') if l.strip())
		removed = sum(int(l.split()[1]) for l in stat.split('\n') if l.strip())
		diff = subprocess.run(git + ['diff'], capture_output=True, text=True).stdout
		for w in c.written:
			if w not in ''.join(l for l in diff.splitlines(True) if l.startswith('+')):
				fail('%s: %r not in the lines written:\n%s' % (c.name, w, diff[-3000:]))
		if c.lines is not None and (added, removed) != c.lines:
			diff = subprocess.run(git + ['diff'], capture_output=True, text=True).stdout
			fail('%s: the port gained %d and lost %d lines, want %d and %d:\n%s' % (
				c.name, added, removed, c.lines[0], c.lines[1], diff[-3000:]))
		subprocess.run(git + ['checkout', '-q', '--', '.'], check=True)


def bad_input(tmp):
	root = copy_tree(os.path.join(tmp, 'bad'))
	before = snapshot(root)
	for name, text, want in cases.bad_inputs(UP, os.path.join(tmp, 'kb')):
		p = os.path.join(tmp, 'bad-' + name)
		with open(p, 'wb') as f:
			f.write(text)
		rc, out, err = tool(root, p)
		lines = [l for l in err.split('\n') if l]
		if rc != 2 or len(lines) != 1 or want not in err:
			fail('bad input %s: exit %d, stderr %r (want exit 2 and one line with %r)'
			     % (name, rc, err, want))
	# a FIFO no writer opens: refused after a while, never waited for (a pipe with a
	# writer is read as a stream); an --upstream that is a file
	fifo = os.path.join(tmp, 'no-writer.fifo')
	os.mkfifo(fifo)
	for args, want in (([fifo], 'nothing to read within'),
			   (['--upstream', os.path.join(tmp, 'two.patch'), fifo], 'not a directory')):
		open(os.path.join(tmp, 'two.patch'), 'a').close()
		p = subprocess.run(['/usr/bin/python3', TOOL, '--root', root] +
				   (args if args[0] == '--upstream' else ['--upstream', UP] + args),
				   capture_output=True, text=True, timeout=60)
		if p.returncode != 2 or len(p.stderr.strip().split('\n')) != 1 or \
				want not in p.stderr:
			fail('bad input %s: exit %d, stderr %r (want exit 2 and one line with %r)'
			     % (args[0], p.returncode, p.stderr, want))
	# a kernel function the port keeps twice (the recursion guard's replay forms):
	# a made-up include/linux/bpf.h in a tree of its own, and a hunk on it
	fake = os.path.join(tmp, 'fake-linux')
	os.makedirs(os.path.join(fake, 'include', 'linux'))
	body = 'static inline bool bpf_prog_get_recursion_context(struct bpf_prog *prog)\n{\n'
	with open(os.path.join(fake, 'include/linux/bpf.h'), 'w') as f:
		f.write(body + '\treturn true;\n}\n')
	with open(os.path.join(tmp, 'two.patch'), 'w') as f:
		f.write('--- a/include/linux/bpf.h\n+++ b/include/linux/bpf.h\n@@ -1,4 +1,4 @@\n' +
			''.join(' ' + l + '\n' for l in body.split('\n')[:2]) +
			'-\treturn true;\n+\treturn false;\n }\n')
	p = subprocess.run(['/usr/bin/python3', TOOL, '--root', root, '--upstream', fake,
			    os.path.join(tmp, 'two.patch')], capture_output=True, text=True)
	if p.returncode != 2 or 'matches two places' not in p.stderr:
		fail('a hunk on a function the port keeps twice: exit %d, %r' % (p.returncode,
										 p.stderr + p.stdout))
	if snapshot(root) != before:
		fail('bad input wrote to the tree')


def main():
	if not os.path.isdir(UP) or not os.path.isdir(OLD):
		# meson's skip: the reference trees live beside the checkout (../shared)
		print('port_patch: skipped: no reference trees at %s and %s' % (UP, OLD))
		return 77
	# four independent parts, each in a tree of its own, two at a time (the
	# work is in the tool's processes): the test's time on a 2-vCPU machine
	with tempfile.TemporaryDirectory(prefix='port-patch-test.') as tmp:
		with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
			jobs = [pool.submit(release, tmp), pool.submit(run_cases, tmp, 0, 2),
				pool.submit(run_cases, tmp, 1, 2), pool.submit(bad_input, tmp)]
			for j in jobs:
				j.result()
	if failures:
		print('port_patch: %d check(s) failed' % len(failures))
		return 1
	print('port_patch: the release round trip, %d cases and the bad inputs as expected' %
	      len(cases.CASES))
	return 0


if __name__ == '__main__':
	sys.exit(main())
