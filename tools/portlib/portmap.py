# SPDX-License-Identifier: GPL-2.0-only
#
# The map from kernel to port: every "Port of" comment of the tree tied to the
# definition below it (functions as port-drift ties them; structs, macros and
# tables by name), and every kernel definition that has a port found by it.
# port-patch, port-where and the map's tests read the tree through this.

import os
import subprocess
import re

from . import drift

STRUCT_RE = re.compile(r'\b(struct|union|enum)\s+([A-Za-z_]\w*)')
# "Port of foo()'s loop", "Port of part of foo()": a fragment of foo() kept apart
FRAGMENT_RE = re.compile(r"(?<![\w*])([A-Za-z_]\w*)\(\)'s\b|\bpart of ([A-Za-z_]\w*)\(\)")


def default_upstream(root):
	"""The Linux 7.3 tree to read: $POKELAB_UPSTREAM, else the reference copy
	beside the checkout (../shared/reference/upstream/7.3), else None."""
	env = os.environ.get('POKELAB_UPSTREAM')
	if env:
		return env
	for top in upstream_tops(root):
		cand = os.path.join(top, '..', 'shared', 'reference', 'upstream', '7.3')
		if os.path.isdir(cand):
			return os.path.normpath(cand)
	return None


def upstream_tops(root):
	"""The checkouts whose ../shared may hold the reference trees: @root, and
	for a git worktree of a checkout (git worktree add), that checkout."""
	tops = [root]
	try:
		p = subprocess.run(['git', '-C', root, 'rev-parse', '--path-format=absolute',
				    '--git-common-dir'], capture_output=True, text=True)
		common = p.stdout.strip() if p.returncode == 0 else ''
	except OSError:
		common = ''
	if common and os.path.basename(common) == '.git':
		main = os.path.dirname(common)
		if os.path.realpath(main) != os.path.realpath(root):
			tops.append(main)
	return tops


def upstream_tried(root):
	"""The default places default_upstream() looked, for a message."""
	return [os.path.normpath(os.path.join(t, '..', 'shared', 'reference', 'upstream', '7.3'))
		for t in upstream_tops(root)]


class Entry:
	"""One port definition of a kernel NAME: where it is, what it ports."""

	def __init__(self, name, kind, src, start, end, paths, claim, line, comment, fragment=False):
		self.name, self.kind, self.src, self.start, self.end = name, kind, src, start, end
		self.paths, self.claim, self.line, self.comment = paths, claim, line, comment
		self.fragment = fragment

	@property
	def rel(self):
		return self.src.rel

	def where(self):
		return '%s:%d' % (self.src.rel, self.line)

	def defname(self):
		"""The name the port defines it under (a fragment's helper's own name)."""
		toks = self.src.toks
		for i in range(self.start, self.end):
			if toks[i + 1].text == '(' and toks[i].kind == 'id':
				return toks[i].text
		return self.name


def _struct_def(src, name, lo, hi):
	"""The tokens of "struct NAME { ... };" between token lo and hi."""
	toks = src.toks
	for i in range(lo, min(hi, len(toks) - 2)):
		if toks[i].text in ('struct', 'union', 'enum') and toks[i + 1].text == name and \
				toks[i + 2].text in ('{', ':'):
			j = i + 2
			while j < len(toks) and toks[j].text != '{':
				j += 1
			e = drift.match_close(toks, j, '{', '}')
			if e is None:
				return None
			while e + 1 < len(toks) and toks[e].text != ';':
				e += 1
			s = i
			while s > lo and toks[s - 1].text in ('typedef', 'static'):
				s -= 1
			return s, e
	return None


def _var_def(src, name, lo, hi):
	"""A declaration of NAME (a table, a per-CPU variable) between lo and hi."""
	toks = src.toks
	for i in range(lo, min(hi, len(toks))):
		if toks[i].text != name or toks[i].pp is not None:
			continue
		s = i
		while s > lo and toks[s - 1].text not in (';', '{', '}') and toks[s - 1].pp is None:
			s -= 1
		e = i
		depth = 0
		while e < len(toks):
			t = toks[e].text
			if t in ('(', '[', '{'):
				depth += 1
			elif t in (')', ']', '}'):
				depth -= 1
			elif t == ';' and depth <= 0:
				return s, e
			e += 1
	return None


class PortMap:
	"""The port tree's Port-of map, read once."""

	def __init__(self, root, files=None):
		self.root = root
		self.renames = drift.read_renames(root)
		self.ports = drift.scan_port(root) if files is None else self._scan(files)
		self.entries = []
		self._build()

	def _scan(self, files):
		ports = []
		for rel, text in files:
			s = drift.Source(os.path.join(self.root, rel), rel, text)
			for c in s.comments:
				m = re.search(r'\bPort of\b', c.text)
				if m:
					ports.append(drift.PortOf(s, c, c.text[m.end():].strip()))
		return ports

	def _build(self):
		rows, _ = drift.tie(self.ports, self.renames)
		seen = set()
		for r in rows:
			d = r.pdef
			self.entries.append(Entry(r.name, 'func', d.src, d.start, d.end, r.port.paths,
						  r.port.claim, d.line, r.port.line))
			seen.add((id(d.src), d.start))
		by_file = {}
		for p in self.ports:
			by_file.setdefault(p.src.rel, []).append(p)
		for plist in by_file.values():
			for k, p in enumerate(plist):
				if not p.paths:
					continue
				hi = plist[k + 1].c.idx if k + 1 < len(plist) else len(p.src.toks)
				pm = drift.PATH_RE.search(p.text)
				head = p.text[:pm.start()] if pm else p.text
				for m in STRUCT_RE.finditer(head):
					span = _struct_def(p.src, m.group(2), p.c.idx, hi)
					if span:
						self.entries.append(Entry(m.group(2), m.group(1), p.src, span[0],
									  span[1], p.paths, p.claim,
									  p.src.toks[span[0]].line, p.line))
				# macros and tables: "Port of NAME, FILE" or "NAME[]"
				for m in re.finditer(r'(?<![\w*])([A-Za-z_]\w*)(\[\])?(?=[\s,]|$)', head):
					name = m.group(1)
					if name in ('Port', 'of', 'and', 'the', 'with', 'struct', 'union',
						    'enum', 'part', 'a', 'its', 'in', 'from'):
						continue
					if not (m.group(2) or re.fullmatch(r'[A-Z_][A-Z0-9_]+', name)):
						continue
					if any(e.name == name and e.src is p.src for e in self.entries):
						continue
					macros = [d for d in drift.find_defs(p.src, lambda x, n=name: x == n,
									     p.c.idx, hi) if d.kind == 'macro']
					if macros:
						d = macros[0]
						self.entries.append(Entry(name, 'macro', p.src, d.start, d.end,
									  p.paths, p.claim, d.line, p.line))
						continue
					span = _var_def(p.src, name, p.c.idx, hi)
					if span:
						self.entries.append(Entry(name, 'decl', p.src, span[0], span[1],
									  p.paths, p.claim,
									  p.src.toks[span[0]].line, p.line))
				# fragments: a part of a kernel function kept in a helper of its own
				for m in FRAGMENT_RE.finditer(head):
					name = m.group(1) or m.group(2)
					defs = [d for d in drift.find_defs(p.src, lambda x: True, p.c.idx, hi)
						if d.kind == 'func']
					if defs:
						d = defs[0]
						self.entries.append(Entry(name, 'func', p.src, d.start, d.end,
									  p.paths, p.claim, d.line, p.line,
									  fragment=True))

	def kernel_files(self):
		return sorted({f for e in self.entries for f in e.paths} |
			      {f for p in self.ports for f in p.paths})

	def find(self, name, kind=None, path=None, fragments=False):
		out = []
		for e in self.entries:
			if e.name != name or (e.fragment and not fragments):
				continue
			if kind and not _kind_ok(kind, e.kind):
				continue
			if path and path not in e.paths:
				continue
			out.append(e)
		return out

	def fragments(self, name, path=None):
		return [e for e in self.entries if e.fragment and e.name == name and
			(not path or path in e.paths)]


def _kind_ok(want, have):
	if want in ('struct', 'union', 'enum'):
		return have == want
	if want == 'func':
		return have == 'func'
	if want == 'macro':
		return have in ('macro', 'func')
	return have in ('decl', 'macro')
