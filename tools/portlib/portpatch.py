# SPDX-License-Identifier: GPL-2.0-only
#
# port-patch: a patch written against the kernel tree, applied to the port.
# See docs/porting.md, "From a kernel patch to the port".

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from . import clihelp
from . import drift
from . import kitems
from . import patchin
from . import place
from .patchin import Bad
from .portmap import Entry, PortMap, default_upstream, upstream_tried

USAGE = 'pokelab port-patch [OPTIONS] PATCH... [--torture [TORTURE-OPTIONS]]'

# docs/porting.md's coverage tables: each upstream file's functions, ported
# (P), in part (partial) or not (-), with why and what pokelab does instead.
COVERAGE_HEADING = '## Coverage'


def read_not_ported(root):
	"""{kernel name: why it is not (or only partly) ported}, from docs/porting.md."""
	path = os.path.join(root, 'docs', 'porting.md')
	out = {}
	try:
		with open(path, encoding='utf-8') as f:
			lines = f.read().split('\n')
	except OSError:
		return out
	if COVERAGE_HEADING not in lines:
		return out
	for line in lines[lines.index(COVERAGE_HEADING) + 1:]:
		if line.startswith('## '):
			break
		cells = [c.strip() for c in line.strip().strip('|').split('|')]
		if not line.startswith('|') or len(cells) < 3 or cells[1] not in ('-', 'partial'):
			continue
		for name in re.findall(r'`([A-Za-z_]\w*)(?:\(\))?`', cells[0]):
			out[name] = ('ported in part: ' if cells[1] == 'partial' else '') + cells[2]
	return out


class Upstream:
	"""The kernel files as the patches leave them, hunk by hunk."""

	def __init__(self, root):
		self.root = root
		self.text, self.src = {}, {}

	def get(self, rel, create=False):
		if rel not in self.text:
			p = os.path.join(self.root, rel)
			if os.path.isfile(p):
				with open(p, encoding='utf-8', errors='replace') as f:
					self.text[rel] = f.read()
			elif create:
				self.text[rel] = ''
			else:
				return None
		return self.text[rel]

	def source(self, rel):
		if rel not in self.src:
			self.src[rel] = drift.Source(os.path.join(self.root, rel), rel, self.get(rel))
		return self.src[rel]

	def set(self, rel, text, src=None):
		self.text[rel] = text
		self.src[rel] = src or drift.Source(os.path.join(self.root, rel), rel, text)


def apply_hunk(text, hunk, reverse):
	"""text with hunk applied, as patch(1) does without fuzz: offset search only."""
	old, new = (hunk.new_lines(), hunk.old_lines()) if reverse else \
		(hunk.old_lines(), hunk.new_lines())
	start = (hunk.target_start if reverse else hunk.source_start) - 1
	lines = text.split('\n')
	trail = lines and lines[-1] == ''
	body = lines[:-1] if trail else lines
	want = [l.rstrip('\n') for l in old]
	n = len(want)
	if not n:
		at = max(min(start + 1, len(body)), 0) if start >= 0 else 0
		if (hunk.target_start if reverse else hunk.source_start) == 0:
			at = 0
		cands = [at]
	else:
		cands = sorted(range(0, max(len(body) - n + 1, 0)), key=lambda k: abs(k - start))
	for k in cands:
		if body[k:k + n] == want:
			out = body[:k] + [l.rstrip('\n') for l in new] + body[k + n:]
			return '\n'.join(out) + ('\n' if trail or not body else ''), k + 1
	return None, None


class Session:
	def __init__(self, args):
		self.args = args
		self.root = args.root
		self.map = PortMap(self.root)
		self.not_ported = read_not_ported(self.root)
		self.kernel_files = set(self.map.kernel_files())
		self.up = Upstream(args.upstream)
		self.port = {}		# rel -> text, as edited
		self.changed = []	# (entry name, rel, line, hunk name)
		self.rows = []		# (hunk, word, text)
		self.failed = 0
		self.applied_note = False

	# -- the port's files, as edited so far

	def port_text(self, rel):
		if rel not in self.port:
			with open(os.path.join(self.root, rel), encoding='utf-8') as f:
				self.port[rel] = f.read()
		return self.port[rel]

	def reload(self, rels):
		"""Re-read the map for the files just edited."""
		keep = [p for p in self.map.ports if p.src.rel not in rels]
		fresh = PortMap(self.root, [(r, self.port[r]) for r in rels])
		self.map.ports = keep + fresh.ports
		self.map.entries = [e for e in self.map.entries if e.rel not in rels] + fresh.entries

	def renames(self, name):
		return drift.renames_for(self.map.renames, name)

	# -- one hunk

	def hunk(self, h, fp):
		path = h.path
		reverse = self.args.reverse
		old = self.up.get(path, create=fp.added if not reverse else fp.removed)
		if old is None:
			raise Bad('%s: %s is not in the kernel tree %s (want a patch against Linux 7.3, '
				  'or --upstream DIR naming the tree it was made against)'
				  % (h.name(), path, self.args.upstream))
		new, at = apply_hunk(old, h, reverse)
		if new is None:
			# the developer's tree may hold the patch already (made there, then
			# git diff): its file is the hunk's result, the base is it taken back
			base, _ = apply_hunk(old, h, not reverse)
			if base is not None:
				if not self.applied_note:
					self.applied_note = True
					print('port-patch: %s already holds %s: reading each hunk back from '
					      'it' % (self.args.upstream, h.patch.name))
				old, new = base, old
				self.up.set(path, old)
		if new is None:
			raise Bad('%s: does not apply to the kernel tree %s: its %s lines are not '
				  'there (a patch against another version? --upstream DIR names the '
				  'tree)' % (h.name(), self.args.upstream,
					     'new' if reverse else 'context and removed'))
		osrc = self.up.source(path)
		nsrc = drift.Source(os.path.join(self.args.upstream, path), path, new)
		self.up.set(path, new, nsrc)
		if path not in self.kernel_files:
			self.row(h, 'no port', 'not in the port: %s has no port' % path)
			return
		if place.comment_only(osrc, nsrc):
			self.row(h, 'comment', 'comment-only, nothing to do')
			return
		pairs = kitems.paired(kitems.items(osrc), kitems.items(nsrc))
		changed = [(a, b) for a, b in pairs if a is None or b is None or a.key != b.key]
		edits = {}
		for a, b in changed:
			self.item(h, path, a, b, osrc, nsrc, pairs, edits)
		self.write_edits(edits)

	def row(self, h, word, text):
		self.rows.append((h, word, text))
		if word in ('conflict', 'already'):
			self.failed += 1

	def entry_for(self, h, path, it):
		kind = it.kind
		found = self.map.find(it.name, kind, path)
		if not found:
			found = self.map.find(it.name, kind)
		if not found and kind == 'decl' and ':' not in it.name:
			found = self.prototype(path, it.name)
		if len(found) > 1:
			# the same kernel name ported twice (config variants): the ones whose file
			# name matches the kernel file's room; else it is ambiguous
			raise Bad('%s: %s matches two places in the port: %s (want one Port-of line '
				  'per kernel definition)' % (h.name(), it.label(), ', '.join(
					  e.where() for e in found[:3])))
		return found[0] if found else None

	def prototype(self, path, name):
		"""A kernel header's prototype of NAME: the declaration of that name in the
		port files whose Port-of lines name the header (no Port-of line of its own:
		the definition carries it)."""
		out, seen = [], set()
		for p in self.map.ports:
			src = p.src
			if path not in p.paths or src.rel in seen:
				continue
			seen.add(src.rel)
			for d in drift.find_defs(src, lambda x: x == name):
				if d.kind == 'decl':
					out.append(Entry(name, 'decl', src, d.start, d.end, [path], '-', d.line,
							 d.line))
		return out[:1]

	def item(self, h, path, a, b, osrc, nsrc, pairs, edits):
		it = a or b
		if it.kind == 'pp':
			self.row(h, 'no port', 'not in the port: the preprocessor line "%s" (the port '
				 'has its own includes and config)' % _short(it.name))
			return
		entry = self.entry_for(h, path, it)
		if entry is not None and a is not None:
			other = self.other_form(a, osrc, entry)
			if other is not None:
				self.row(h, 'no port', 'not in the port: the port follows the other #ifdef form '
					 'of %s (kernel line %d), not this one (line %d)' % (
						 a.label(), other.line, a.line))
				return
		if a is not None and b is not None:
			if entry is None:
				self.row(h, 'no port', self.no_port(it))
				return
			self.merge(h, path, a, b, osrc, nsrc, entry, edits)
		elif b is not None:
			self.add(h, path, b, nsrc, pairs, edits)
		else:
			if entry is None:
				self.row(h, 'no port', self.no_port(it, removed=True))
				return
			self.remove(h, entry, edits)

	def other_form(self, a, osrc, entry):
		"""Of several #ifdef forms of a's name, the one the port follows if not a."""
		forms = [x for x in kitems.items(osrc) if x.kind == a.kind and x.name == a.name]
		if len(forms) < 2:
			return None
		pkeys = [drift.rename(t.text, self.renames(a.name))
			 for t in entry.src.toks[entry.start:entry.end + 1]]

		def score(x):
			return difflib.SequenceMatcher(None, pkeys, [t.text for t in x.toks],
						       autojunk=False).ratio()
		best = max(forms, key=score)
		return None if best is a or best.start == a.start else best

	def no_port(self, it, removed=False):
		instead = self.not_ported.get(it.name)
		what = 'the kernel %s %s has no port' % (
			{'func': 'function', 'macro': 'macro', 'decl': 'definition'}.get(it.kind, it.kind),
			it.label())
		return 'not in the port: %s%s' % (what, ' (docs/porting.md: %s)' % instead if instead
						  else '')

	def likeness(self, entry, it, src):
		"""The port definition's lines that differ from the kernel's item @it, its
		own marked deviations aside (port-drift's comparison)."""
		kind = 'macro' if entry.kind == 'macro' else 'func'
		pdef = drift.Def(entry.src, entry.name, entry.start, entry.end, kind)
		spots = drift.mark_units(pdef)
		pkeys = drift.port_keys(pdef.units(), self.renames(it.name))
		v, _ = drift.compare(pdef, pkeys, spots, drift.Def(src, it.name, it.start, it.end,
								  kind))
		return v.n if v.word == 'differs' else 0

	def held_insertions(self, m, nsrc, b, entry):
		"""Does the port hold already each statement the hunk inserts: one the
		kernel's result pairs with a port statement (its marked deviation, say) that
		the kernel's code before the hunk pairs with nothing?"""
		every = m.regions()
		regions = [(t1, t2) for b1, b2, t1, t2 in every if b1 == b2 and t2 > t1]
		if not regions or len(regions) != len(every):
			return False
		alt = place.Alignment(nsrc, b, entry, self.renames(b.name))
		taken = {p for ps in m.als[0].bcorr.values() for p in ps}
		for t1, t2 in regions:
			units = {alt.bunit_of.get(m.ttoks[k].i) for k in range(t1, t2)}
			for u in units:
				ps = alt.bcorr.get(u) if u is not None else None
				if not ps or set(ps) & taken:
					return False
		return True

	def merge(self, h, path, a, b, osrc, nsrc, entry, edits):
		entries = [entry] + self.map.fragments(a.name, path)
		m = place.Merge(osrc, a, nsrc, b, entries, self.renames(a.name)).run()
		if m.conflicts:
			line, expect, port = m.conflicts[0]
			# the port's code, not a comment block's opening that follows it
			while port and port[-1].strip().startswith(('/*', '*')):
				port.pop()
			detail = ['    kernel 7.3 expects:  ' + x.strip() for x in expect] + \
				 ['    port has:            ' + x.strip() for x in port]
			series = sorted({re.search(r'series v\d+( \d+/\d+)?', x).group()
					 for x in port if re.search(r'series v\d+', x)})
			if series:
				detail.append('    why:                 the port\'s code there is a posted '
					      'series\' (%s), which a kernel-tree hunk never replaces: '
					      'port this hunk by hand (docs/porting.md)' % ', '.join(series))
			self.row(h, 'conflict', 'conflict at %s:%d (%s): the port\'s code there is '
				 'not the kernel\'s%s\n%s' % (entry.rel, line, a.label(),
							      '' if len(m.conflicts) == 1 else
							      ' (%d places)' % len(m.conflicts),
							      '\n'.join(detail)))
			return
		if m.absorbed:
			self.row(h, 'absorbed', '%s of %s: the port does otherwise there, at %s (a '
				 'marked deviation): nothing to do' % (
					 'a change' if len(m.absorbed) == 1 else
					 '%d changes' % len(m.absorbed), a.label(), ', '.join(
						 '%s:%d' % (entry.rel, n) for n in sorted(set(m.absorbed)))))
		# a change the port holds already (a patch applied by hand, or -R of one never
		# applied): fewer of the port's unmarked lines differ from the hunk's result
		# than from what it changes, and carrying the change over again would write
		# its lines a second time
		if m.edits and (self.likeness(entry, b, nsrc) < self.likeness(entry, a, osrc) or
				self.held_insertions(m, nsrc, b, entry)):
			if self.args.reverse:
				why = 'the port reads as the kernel\'s without this hunk already: ' \
				      'nothing to take out (was the patch applied?)'
			else:
				why = 'the port reads as the kernel\'s with this hunk already (applied ' \
				      'twice? -R takes it out)'
			self.row(h, 'already', '%s at %s:%d (%s): %s' % (
				'not applied' if self.args.reverse else 'already applied', entry.rel,
				entry.line, a.label(), why))
			return
		if not m.edits:
			if not m.absorbed:
				self.row(h, 'comment', 'nothing to do in %s (only what the port reads '
					 'otherwise changed)' % a.label())
			return
		for e in entries:
			if id(e) not in m.used:
				continue
			es = [x for x in m.edits if x.src is e.src and e.src.toks[e.start].start <= x.start
			      <= e.src.toks[e.end].end + 1]
			if not es:
				continue
			edits.setdefault(e.rel, []).extend(es)
			line = min(x.line for x in es)
			dropped = sorted(set(m.dropped)) if e is entries[0] else []
			self.row(h, 'applied', 'applied at %s:%d (%s%s)%s' % (
				e.rel, line, a.label(), ', in its helper %s()' % e.defname()
				if e.fragment else '', '; the port\'s own marked lines %s went with the '
				'statements the hunk rewrote: put back what pokelab needs of them' %
				', '.join('%s:%d' % (e.rel, n) for n in dropped) if dropped else ''))
			self.changed.append((a.name, e.rel, line, h))

	def add(self, h, path, b, nsrc, pairs, edits):
		"""A new kernel definition goes beside its ported neighbour."""
		if b.kind == 'decl' and b.name.startswith('EXPORT_SYMBOL'):
			self.row(h, 'no port', 'not in the port: %s(%s): the port exports only what its '
				 'test modules call, with C linkage (kernel_shim/include/linux/export.h)'
				 % tuple(b.name.split(':', 1)))
			return
		new_items = [y for x, y in pairs if y is not None]
		new_items.sort(key=lambda it: it.start)
		k = new_items.index(b)
		text = nsrc.text
		prev_end = nsrc.toks[new_items[k - 1].end].end if k > 0 else 0
		lo = place.line_start(text, nsrc.toks[b.start].start)
		# the comment block right above it comes with it
		seg_lo = place.line_start(text, prev_end) if prev_end else 0
		above = text[prev_end:lo]
		m = re.search(r'\n\s*\n', above)
		lo = prev_end + m.end() if m else lo
		lo = max(lo, seg_lo)
		hi = min(place.line_end(text, nsrc.toks[b.end].end) + 1, len(text))
		body = place.render(nsrc, lo, hi, nsrc.toks, place.inverse_renames(
			self.renames(b.name)))
		body = body.lstrip('\n')
		# the nearest neighbours first, alternating: the one before, the one after, ...
		order = [j for d in range(1, len(new_items)) for j in (k - d, k + d)
			 if 0 <= j < len(new_items)]
		for j in order:
			nb = new_items[j]
			# a function beside a function, a macro beside a macro, ...
			# DEFINE_PER_CPU(...) beside a DEFINE_PER_CPU(...), a prototype beside one
			if nb.kind != b.kind or ((':' in nb.name) != (':' in b.name)) or \
					(':' in b.name and nb.name.split(':')[0] != b.name.split(':')[0]):
				continue
			e = self.entry_for(h, path, nb)
			if e is None:
				continue
			ptext = self.port_text(e.rel)
			# a definition gets its Port-of line; a prototype goes bare, as the port's do
			tag = '' if e.kind == 'decl' and e.comment == e.line else \
				'/* Port of %s, %s, added by port-patch */\n' % (
					b.label() if b.kind != 'decl' else b.name.split(':')[-1], path)
			if j < k:
				at = min(place.line_end(ptext, e.src.toks[e.end].end) + 1, len(ptext))
			else:
				at = place.line_start(ptext, _comment_start(e))
			# C++ wants a name declared before its use: never after the port of a
			# kernel definition in the same file that uses it
			user = self.first_user(h, path, b, new_items, e.rel)
			if user is not None and user < at:
				at, j = user, k + 1
			if j < k:
				ins = ('\n' + tag if tag else '') + body
			else:
				ins = tag + body + ('\n' if tag else '')
			edits.setdefault(e.rel, []).append(place.Edit(at, at, ins,
							       ptext.count('\n', 0, at) + 2))
			self.row(h, 'applied', 'applied at %s:%d (%s, new, beside %s)' % (
				e.rel, ptext.count('\n', 0, at) + 2, b.label(), nb.label()))
			self.changed.append((b.name, e.rel, ptext.count('\n', 0, at) + 2, h))
			return
		self.row(h, 'no port', 'not in the port: %s is new and no neighbour of it has a '
			 'port' % b.label())

	def first_user(self, h, path, b, new_items, rel):
		"""Where, in the port file @rel, the first port of a kernel definition that
		names @b starts (its Port-of comment), or None."""
		name = b.name.split(':')[-1]
		best = None
		for it in new_items:
			if it is b or not any(t.kind == 'id' and t.text == name for t in it.toks):
				continue
			e = self.entry_for(h, path, it)
			if e is None or e.rel != rel:
				continue
			at = place.line_start(self.port_text(rel), _comment_start(e))
			best = at if best is None else min(best, at)
		return best

	def remove(self, h, entry, edits):
		ptext = self.port_text(entry.rel)
		lo = place.line_start(ptext, _comment_start(entry))
		hi = min(place.line_end(ptext, entry.src.toks[entry.end].end) + 1, len(ptext))
		if hi < len(ptext) and ptext[hi] == '\n' and lo > 0 and ptext[lo - 1] == '\n':
			hi += 1
		edits.setdefault(entry.rel, []).append(place.Edit(lo, hi, '', entry.line))
		self.row(h, 'applied', 'applied at %s:%d (%s, removed)' % (entry.rel, entry.line,
									 entry.name))
		self.changed.append((entry.name, entry.rel, entry.line, h))

	def write_edits(self, edits):
		for rel, es in edits.items():
			text = self.port_text(rel)
			es.sort(key=lambda e: (e.start, e.end))
			for x, y in zip(es, es[1:]):
				if y.start < x.end:
					raise Bad('%s: two changes of one hunk overlap at line %d' % (rel, y.line))
			for e in reversed(es):
				text = text[:e.start] + e.text + text[e.end:]
			self.port[rel] = text
		if edits:
			self.reload(set(edits))


def _comment_start(entry):
	"""Where the entry's Port-of comment starts (or the definition, without one)."""
	src = entry.src
	for c in src.comments:
		if c.line == entry.comment or (c.line <= entry.comment <= c.end):
			return c.start
	return src.toks[entry.start].start


def _short(s):
	return s if len(s) <= 50 else s[:47] + '...'


def parse(argv):
	torture = None
	if '--torture' in argv:
		k = argv.index('--torture')
		argv, torture = argv[:k], argv[k + 1:]
	ap = clihelp.Parser(
		'port-patch', USAGE, 'Apply patches written against the Linux 7.3 tree (git diff, git '
		'format-patch, a b4 am mbox) to the port, by function, comments ignored, all or '
		'nothing. Exit 0 all placed, 1 a conflict (nothing written), 2 bad input; with '
		'--torture, torture\'s status, 3 for a conflict',
		footer='Everything after --torture goes to pokelab torture (default: --duration '
		'20). See docs/porting.md, "From a kernel patch to the port".')
	ap.positional('patches', 'patch', 'FILE', 'Patch files (git diff, git format-patch, an '
		      'mbox), applied in order')
	ap.add_argument('--check', action='store_true', help='Say where each hunk goes, write nothing')
	ap.add_argument('-R', '--reverse', action='store_true', help='Take the patches back out')
	ap.add_argument('--no-record', action='store_true',
			help='Keep no record of what was replaced (-R then merges, as for a patch '
			'port-patch did not apply); with -R, merge even when a record exists')
	ap.add_argument('--reject', action='store_true',
			help='Write the hunks that were placed even if some were not')
	ap.add_argument('--upstream', metavar='DIR',
			help='The kernel tree the patches were made against (default: '
			'$POKELAB_UPSTREAM, else ../shared/reference/upstream/7.3 beside the checkout)')
	ap.add_argument('--worktree', metavar='DIR',
			help='Apply to a new git worktree DIR of the checkout, not to the checkout')
	ap.add_argument('--build', metavar='DIR', help='Build directory for --torture (default: '
			'build/ of the tree patched)')
	ap.add_argument('--root', metavar='DIR', help='The pokelab checkout (default: the one '
			'this command is in)')
	ap.add_argument('--torture', metavar='TORTURE-OPTIONS', help='Build the patched tree and '
			'run pokelab torture on it with the options after it, for a verdict (it takes '
			'the rest of the command line)')
	args = ap.parse_args(argv)
	args.torture = torture
	if not args.patches:
		raise Bad('no PATCH given; expected %s' % USAGE)
	# the checkout this script is in, as where's, whatever the current directory
	root = args.root or os.path.dirname(os.path.dirname(os.path.dirname(
		os.path.abspath(__file__))))
	if not os.path.isfile(os.path.join(root, 'tools', 'port-drift')):
		raise Bad('--root %s: not a pokelab checkout; expected --root DIR, a pokelab '
			  'checkout' % root)
	args.root = os.path.abspath(root)
	given = args.upstream
	args.upstream = args.upstream or default_upstream(args.root)
	if not args.upstream:
		raise Bad('no Linux 7.3 tree found at %s (want --upstream DIR or $POKELAB_UPSTREAM, '
			  'the tree the patches were made against)' % ' or '.join(
				  upstream_tried(args.root)))
	if not os.path.isdir(args.upstream):
		raise Bad('%s %s: %s (want --upstream DIR, the Linux 7.3 tree the patches were '
			  'made against)' % ('--upstream' if given else '$POKELAB_UPSTREAM',
					     args.upstream, 'not a directory' if os.path.exists(
						     args.upstream) else 'no such directory'))
	if args.worktree and os.path.exists(args.worktree):
		raise Bad('--worktree %s: already exists (want a new directory for git worktree '
			  'add)' % args.worktree)
	if args.check and args.torture is not None:
		raise Bad('--check with --torture: a dry run has nothing to torture (drop one)')
	if args.build and args.torture is None:
		raise Bad('--build %s without --torture: nothing to build (add --torture)' % args.build)
	return args


def main(argv):
	t0 = time.monotonic()
	args = parse(argv)
	patches = patchin.read_patches(args.patches)
	checkout = args.root
	if args.worktree and not args.check:
		# the new worktree is what is read and patched: the checkout stays as it is
		args.root = make_worktree(checkout, args.worktree)
	key = record_key(args.patches)
	if not args.reverse and not args.worktree:
		held = restore_record(args.root, key, True)
		if held is not None:
			print('port-patch: %s: already applied: port-patch applied it to %s, still as it '
			      'left them (-R takes it back out); nothing written' % (
				      ' '.join(args.patches), ', '.join(sorted(held))))
			return 3 if args.torture is not None else 1
	if args.reverse and not args.worktree and not args.no_record:
		rec = record_path(args.root, key)
		built = rec and os.path.isfile(rec) and built_since(args, os.path.getmtime(rec))
		done = restore_record(args.root, key, args.check)
		if done is not None:
			print('port-patch: -R: %s %d file%s byte for byte from what port-patch kept when '
			      'it applied %s (%.2f s)' % ('would restore' if args.check else 'restored',
						  len(done), '' if len(done) == 1 else 's',
						  ' '.join(args.patches), time.monotonic() - t0))
			if built and args.torture is None:
				print('port-patch: -R: %s still holds the pokelab built with the patch: '
				      'ninja -C %s tools/pokelab builds it from the restored sources' % (
					      built, built))
			if args.torture is not None and not args.check:
				from . import verdict
				return verdict.torture(args, args.root, Session(args), patches)
			return 0
	s = Session(args)
	order = list(patches)
	if args.reverse:
		# --upstream is the tree the patches were made against: bring it to their
		# result first, then take them back out hunk by hunk, last first
		for p in patches:
			for fp in p.files:
				for h in fp.hunks:
					old = s.up.get(h.path, create=fp.added)
					if old is None:
						raise Bad('%s: %s is not in the kernel tree %s' % (
							h.name(), h.path, args.upstream))
					new, _ = apply_hunk(old, h, False)
					if new is None and apply_hunk(old, h, True)[0] is not None:
						new = old	# the tree holds the patch already
					if new is None:
						raise Bad('%s: does not apply to the kernel tree %s (-R takes '
							  'back a patch made against it)' % (h.name(),
											    args.upstream))
					s.up.set(h.path, new)
		order.reverse()
	for p in order:
		files = list(p.files)
		if args.reverse:
			files.reverse()
		for fp in files:
			hunks = list(fp.hunks)
			if args.reverse:
				hunks.reverse()
			for h in hunks:
				s.hunk(h, fp)
	out = []
	for h, word, text in s.rows:
		out.append('%s: %s' % (h.name(), text))
	counts = {}
	for _, word, _ in s.rows:
		counts[word] = counts.get(word, 0) + 1
	placed_t = time.monotonic() - t0
	nh, nc = len({id(h) for h, _, _ in s.rows}), len(s.rows)
	summary = '%d hunk%s, %d change%s: %d applied, %d comment-only or nothing to do, %d absorbed ' \
		  'by marked deviations, %d not in the port, %d conflicts (%.2f s)' % (
			  nh, '' if nh == 1 else 's', nc, '' if nc == 1 else 's', counts.get('applied', 0),
			  counts.get('comment', 0), counts.get('absorbed', 0), counts.get('no port', 0),
			  counts.get('conflict', 0), placed_t)
	if counts.get('already'):
		summary = summary.replace(' conflicts (', ' conflicts, %d %s (' % (
			counts['already'], 'not applied' if args.reverse else 'already applied'))
	sys.stdout.write('\n'.join(out) + '\n')
	target = args.root
	write = not args.check and (not s.failed or args.reject)
	if write:
		before = {}
		for rel in s.port:
			try:
				with open(os.path.join(target, rel), encoding='utf-8') as f:
					before[rel] = f.read()
			except OSError:
				before[rel] = None
		written = write_files(target, s.port, {r for _, r, _, _ in s.changed})
		if written and not args.reverse and not args.no_record:
			keep_record(target, key, {r: (before[r], s.port[r]) for r in written})
		summary += '; wrote %d file%s%s' % (len(written), '' if len(written) == 1 else 's',
						      ' in ' + target if args.worktree else '')
	elif s.failed:
		summary += '; nothing written (all or nothing, as git apply: --reject writes the rest)'
		if args.worktree and not args.check:
			subprocess.run(['git', '-C', checkout, 'worktree', 'remove', '--force', args.root],
				       capture_output=True)
			summary += '; worktree %s removed' % args.worktree
	else:
		summary += '; --check: nothing written'
	print('port-patch: ' + summary)
	if s.failed and not (args.reject and write):
		return 3 if args.torture is not None else 1
	if args.torture is not None:
		from . import verdict
		return verdict.torture(args, target, s, patches)
	return 1 if s.failed else 0


# What -R needs to give a tree back byte for byte: each file as it was before
# port-patch applied the patches and as it left it, kept in the checkout's git
# directory (never in the work tree) under a hash of the patches' bytes.
def record_key(paths):
	h = hashlib.sha256()
	for p in paths:
		if p in patchin.RAW:
			h.update(patchin.RAW[p])
		else:
			with open(p, 'rb') as f:
				h.update(f.read())
		h.update(b'\0')
	return h.hexdigest()[:24]


def record_path(root, key):
	p = subprocess.run(['git', '-C', root, 'rev-parse', '--absolute-git-dir'],
			   capture_output=True, text=True)
	if p.returncode:
		return None
	return os.path.join(p.stdout.strip(), 'port-patch', key + '.json')


def built_since(args, t):
	"""The build directory whose pokelab was built after time @t, if one was
	(--torture builds the patched tree in it)."""
	build = args.build or os.path.join(args.root, 'build')
	exe = os.path.join(build, 'tools', 'pokelab')
	try:
		return os.path.join(os.path.relpath(build), '') if os.path.getmtime(exe) > t else None
	except OSError:
		return None


def keep_record(root, key, files):
	path = record_path(root, key)
	if not path:
		return
	os.makedirs(os.path.dirname(path), exist_ok=True)
	fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.rec.')
	with os.fdopen(fd, 'w', encoding='utf-8') as f:
		json.dump({r: {'before': b, 'after': a} for r, (b, a) in files.items()}, f)
	os.replace(tmp, path)


def restore_record(root, key, check):
	"""The files back as they were, if each is still as port-patch left it."""
	path = record_path(root, key)
	if not path or not os.path.isfile(path):
		return None
	with open(path, encoding='utf-8') as f:
		rec = json.load(f)
	for rel, v in rec.items():
		try:
			with open(os.path.join(root, rel), encoding='utf-8') as f:
				if f.read() != v['after']:
					return None		# edited since: take the patch back by merging
		except OSError:
			return None
	if check:
		return list(rec)
	write_files(root, {rel: v['before'] for rel, v in rec.items() if v['before'] is not None},
		    set(rec))
	os.unlink(path)
	return list(rec)


def make_worktree(root, wt):
	p = subprocess.run(['git', '-C', root, 'worktree', 'add', '--detach', '-q', wt],
			   capture_output=True, text=True)
	if p.returncode:
		raise Bad('--worktree %s: git worktree add failed: %s' % (wt, p.stderr.strip()))
	return os.path.abspath(wt)


def write_files(root, texts, rels):
	"""Each edited file replaced whole (a temporary file renamed over it)."""
	done = []
	for rel in sorted(texts):
		path = os.path.join(root, rel)
		try:
			with open(path, encoding='utf-8') as f:
				if f.read() == texts[rel]:
					continue
		except OSError:
			pass
		fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix='.port-patch.')
		with os.fdopen(fd, 'w', encoding='utf-8') as f:
			f.write(texts[rel])
		st = os.stat(path) if os.path.exists(path) else None
		if st:
			os.chmod(tmp, st.st_mode & 0o7777)
		os.replace(tmp, path)
		done.append(rel)
	return done


def run(argv):
	try:
		sys.exit(main(argv))
	except (Bad, clihelp.Usage, drift.Usage) as e:
		clihelp.report('port-patch', e)
	except BrokenPipeError:
		sys.exit(0)
	except KeyboardInterrupt:
		sys.stderr.write('pokelab: port-patch: interrupted; nothing more written\n')
		sys.exit(130)
