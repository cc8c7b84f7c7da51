# SPDX-License-Identifier: GPL-2.0-only
#
# port-drift: which upstream kernel version each ported function still reads as.
# This module is also the code reducer that tools/port-patch and tools/port-where
# use (Source, split_units, find_defs, mark_units, read_renames, scan_port, tie).
#
# Every ported function carries "Port of NAME(), UPSTREAM/FILE[, version]". For
# each such comment this finds the port's definition of NAME just below it and
# NAME's definition in UPSTREAM/FILE of every --upstream tree, reduces both to
# code (no comments, whitespace folded, docs/porting.md's renames applied),
# and diffs the two. Lines the port marks "userspace:" may differ; any other
# difference is drift. See docs/porting.md, "Which upstream version a port
# follows".

import argparse
import difflib
import os
import re
import sys

USAGE = ('tools/port-drift --upstream [LABEL=]DIR [--upstream [LABEL=]DIR ...] [--diff] '
	 '[--function NAME] [--root SRCROOT]')
SOURCE_EXT = ('.c', '.cc', '.cpp', '.cxx', '.h', '.hh', '.hpp')
SKIP_DIRS = {'.git', 'subprojects', 'node_modules'}
# A directory holding this file is not scanned (the test's fixture trees).
IGNORE_MARK = '.port-drift-ignore'
RENAME_HEADING = '## Renames the drift check applies'

# Words of a function's head that say how it is built, not what it is.
HEAD_NOISE = {
	'static', 'inline', '__inline', '__inline__', '__always_inline', 'noinline', '__noinline',
	'noinstr', 'notrace', '__init', '__init_or_module', '__ref', '__weak', '__visible',
	'asmlinkage', '__maybe_unused', '__always_unused', '__must_check', '__cold', '__flatten',
	'__noclone', '__cpuidle', '__kprobes', 'nokprobe_inline', 'extern', 'noexcept',
	'__used', '__exit', '__sched', '__attribute_const__', 'constexpr', '__pure',
}
CONTROL = {'if', 'for', 'while', 'switch'}
# list_for_each_entry(), for_each_possible_cpu(), scoped_guard(): heads like if and for
LOOP_MACRO = re.compile(r'(\w+_)?for_each(_\w+)?$|scoped_(cond_)?guard$')
# "userspace: why" marks a deviation; "series v7 24/31: what" a posted series' line
MARKER_RE = re.compile(r'userspace\b\s*(:|$)|series(\s+v\d+)?(\s+\d+/\d+)?\s*(:|$)')
PATH_RE = re.compile(r'(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:c|h|S))\b')
NAME_RE = re.compile(r'(?<![\w*])([A-Za-z_][\w*]*)\(\)')

TOKEN_RE = re.compile(r'''
	(?P<ws>[ \t\f\v\r]+|\\\n)
	|(?P<nl>\n)
	|(?P<lc>//[^\n]*)
	|(?P<bc>/\*.*?(?:\*/|\Z))
	|(?P<str>(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"?)
	|(?P<chr>(?:u8|[uUL])?'(?:\\.|[^'\\\n])*'?)
	|(?P<num>\.?[0-9](?:[eEpP][+-]|[\w.])*)
	|(?P<id>[A-Za-z_$][\w$]*)
	|(?P<op>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|::|\#\#|\S)
''', re.S | re.X)


class Usage(Exception):
	"""Bad input: one line for stderr, exit status 2."""


class Tok:
	__slots__ = ('text', 'kind', 'line', 'space', 'pp', 'i', 'start', 'end')

	def __init__(self, text, kind, line, space, pp, i, start=-1, end=-1):
		self.text, self.kind, self.line, self.space, self.pp, self.i = \
			text, kind, line, space, pp, i
		self.start, self.end = start, end	# character offsets in the file


class Comment:
	def __init__(self, raw, line, end, idx):
		self.line, self.end, self.idx, self.raw = line, end, idx, raw
		body = raw[2:-2] if raw.startswith('/*') else raw[2:]
		parts = [re.sub(r'^\s*\*?\s?', '', s).strip() for s in body.split('\n')]
		self.text = ' '.join(p for p in parts if p)
		self.before = self.after = False	# code on its first / last line

	@property
	def marker(self):
		return bool(MARKER_RE.match(self.text))


def read_source(path):
	try:
		with open(path, encoding='utf-8', errors='replace') as f:
			return f.read()
	except OSError as e:
		raise Usage('%s: cannot read it: %s' % (path, e.strerror))


class Source:
	"""One C or C++ file as tokens (comments apart) with line numbers."""

	def __init__(self, path, rel, text=None):
		self.path, self.rel = path, rel
		text = self.text = read_source(path) if text is None else text
		self.toks, self.comments = [], []
		line, space, bol, pp, npp = 1, False, True, None, 0
		for m in TOKEN_RE.finditer(text):
			kind, s = m.lastgroup, m.group()
			if kind == 'ws':
				space = True
				line += s.count('\n')
			elif kind == 'nl':
				line, space, bol, pp = line + 1, True, True, None
			elif kind in ('lc', 'bc'):
				c = Comment(s, line, line + s.count('\n'), len(self.toks))
				c.start, c.stop = m.start(), m.end()
				self.comments.append(c)
				line, space = c.end, True
			else:
				if bol and s == '#':
					npp += 1
					pp = npp
				bol = False
				self.toks.append(Tok(s, kind, line, space, pp, len(self.toks),
						     m.start(), m.end()))
				space = False
		for c in self.comments:
			c.before = c.idx > 0 and self.toks[c.idx - 1].line == c.line
			c.after = c.idx < len(self.toks) and self.toks[c.idx].line == c.end


def match_close(toks, i, lo='(', hi=')'):
	depth = 0
	for j in range(i, len(toks)):
		if toks[j].text == lo:
			depth += 1
		elif toks[j].text == hi:
			depth -= 1
			if depth == 0:
				return j
	return None


class Unit:
	"""A line of code as the diff sees it: a statement, a block's head, a brace."""

	def __init__(self, toks, kind):
		self.toks, self.kind = toks, kind
		self.line = toks[0].line
		self.lines = {t.line for t in toks}
		self.marked = False
		self.key = ' '.join(t.text for t in toks)

	@property
	def first(self):
		return self.toks[0].text

	def show(self):
		return ''.join((' ' if t.space and k else '') + t.text for k, t in enumerate(self.toks))


def is_control(word):
	return word in CONTROL or bool(LOOP_MACRO.match(word))


def split_units(toks):
	"""Cut tokens into statement-sized units, whatever their line breaks."""
	units, cur, depth, i, n = [], [], 0, 0, len(toks)
	ctrl_done = False

	def flush(kind):
		nonlocal cur, ctrl_done
		if cur:
			units.append(Unit(cur, kind))
		cur, ctrl_done = [], False

	while i < n:
		t = toks[i]
		if t.pp is not None:
			flush('stmt')
			j = i
			while j < n and toks[j].pp == t.pp:
				j += 1
			units.append(Unit(toks[i:j], 'pp'))
			i = j
			continue
		cur.append(t)
		x = t.text if t.kind in ('op', 'id') else None
		nxt = toks[i + 1].text if i + 1 < n else ''
		i += 1
		if x in ('(', '['):
			depth += 1
		elif x in (')', ']'):
			depth = max(depth - 1, 0)
			if depth == 0 and x == ')' and not ctrl_done and (
					is_control(cur[0].text) or
					(cur[0].text == 'else' and len(cur) > 1 and cur[1].text == 'if')):
				ctrl_done = True
				if nxt not in ('{', ';'):
					flush('head')
		elif depth > 0:
			if x == '{':
				depth += 1
			elif x == '}':
				depth -= 1
		elif x == '{':
			prev = cur[-2].text if len(cur) > 1 else ''
			keys = [u.text for u in cur]
			if prev in ('=', 'return', ',', '[', ']') or (prev == ')' and '=' in keys and
								  not is_control(cur[0].text)):
				depth += 1
			else:
				flush('open')
		elif x == '}':
			cur.pop()
			flush('stmt')
			cur = [t]
			flush('close')
		elif x == ';':
			flush('stmt')
		elif x == ':' and (cur[0].text in ('case', 'default') or len(cur) == 2) and \
				'?' not in [u.text for u in cur]:
			flush('label')
		elif x in ('else', 'do') and len(cur) == 1 and nxt not in ('{', 'if'):
			flush('head')
	flush('stmt')
	return units


def extent(units, i):
	"""The last unit of the statement that starts at units[i]."""
	u = units[i]
	if u.kind == 'open':
		depth, j = 0, i
		while j < len(units):
			depth += {'open': 1, 'close': -1}.get(units[j].kind, 0)
			if depth == 0:
				break
			j += 1
		j = min(j, len(units) - 1)
	elif u.kind == 'head':
		j = extent(units, i + 1) if i + 1 < len(units) else i
	else:
		return i
	if j + 1 < len(units):
		n = units[j + 1]
		if n.first == 'else' and u.first in ('if', 'else', '}'):
			return extent(units, j + 1)
		if n.first == 'while' and u.first == 'do':
			return j + 1
	return j


class Def:
	def __init__(self, src, name, start, end, kind):
		self.src, self.name, self.start, self.end, self.kind = src, name, start, end, kind
		self.line = src.toks[start].line
		self._units = None

	def units(self):
		"""Units of the definition, the head first; comments in it mark them."""
		if self._units is not None:
			return self._units
		toks = self.src.toks[self.start:self.end + 1]
		if self.kind == 'macro':
			head_end = 3
			if len(toks) > 3 and toks[3].text == '(' and not toks[3].space:
				head_end = (match_close(toks, 3) or len(toks) - 1) + 1
			body = [Tok(t.text, t.kind, t.line, t.space, None, t.i, t.start, t.end)
				for t in toks[head_end:]]
			units = [Unit(toks[:head_end], 'head')] + split_units(body)
		else:
			units = split_units(toks)
			units[0].kind = 'head'
		self._units = units
		return units


ATTR_OK = {'const', 'override', 'final', 'noexcept', 'throw'}


def def_at(src, i, lo):
	"""If src.toks[i] names a function being defined or declared, its Def."""
	toks = src.toks
	if i + 1 >= len(toks) or toks[i + 1].text != '(' or toks[i].pp is not None:
		return None
	p = i
	while p > lo and toks[p - 1].pp is None and toks[p - 1].text not in (';', '{', '}'):
		p -= 1
	prefix = [t.text for t in toks[p:i]]
	if not prefix or prefix[-1] not in ('*', '&', '::', '>', ')') and \
			not re.match(r'[A-Za-z_]', prefix[-1]):
		return None
	bad = {'=', 'return', '.', '->', '?', ':', '!', '+', '-', '/', '%', '^', '|', '||', '&&',
	       '==', '!=', 'case', 'goto', 'sizeof', 'else', 'do', 'typedef', '#'} | CONTROL
	if any(t in bad for t in prefix):
		return None
	j = match_close(toks, i + 1)
	if j is None:
		return None
	j += 1
	while j < len(toks):
		t = toks[j]
		if t.text == '(' and toks[j - 1].kind == 'id':
			j = (match_close(toks, j) or len(toks)) + 1
		elif t.text == '[' and j + 1 < len(toks) and toks[j + 1].text == '[':
			j = (match_close(toks, j, '[', ']') or len(toks)) + 1
		elif t.kind == 'id' and (t.text in ATTR_OK or t.text.startswith('__')):
			j += 1
		else:
			break
	if j >= len(toks):
		return None
	if toks[j].text == ';':
		return Def(src, toks[i].text, p, j, 'decl')
	if toks[j].text != '{':
		return None
	e = match_close(toks, j, '{', '}')
	return Def(src, toks[i].text, p, e, 'func') if e is not None else None


def find_defs(src, want, lo=0, hi=None, toplevel=False):
	"""Definitions (and declarations) of names for which want(name) holds."""
	toks, out, depth = src.toks, [], 0
	hi = len(toks) if hi is None else hi
	i = lo
	while i < hi:
		t = toks[i]
		if t.pp is not None:
			j = i
			while j < len(toks) and toks[j].pp == t.pp:
				j += 1
			if j - i > 2 and toks[i + 1].text == 'define' and want(toks[i + 2].text):
				out.append(Def(src, toks[i + 2].text, i, j - 1, 'macro'))
			i = j
			continue
		if t.text == '{':
			depth += 1
		elif t.text == '}':
			depth -= 1
		elif t.kind == 'id' and (depth == 0 or not toplevel):
			m = re.fullmatch(r'SYSCALL_DEFINE\d', t.text)
			if m and i + 3 < hi and toks[i + 1].text == '(' and want(toks[i + 2].text):
				k = match_close(toks, i + 1)
				if k is not None and k + 1 < len(toks) and toks[k + 1].text == '{':
					e = match_close(toks, k + 1, '{', '}')
					if e is not None:
						out.append(Def(src, toks[i + 2].text, i, e, 'func'))
						i = e + 1
						continue
			if want(t.text):
				d = def_at(src, i, lo)
				if d:
					out.append(d)
					if d.kind == 'func':
						i = d.end + 1
						continue
		i += 1
	return out


def mark_units(d):
	"""Set Unit.marked from the userspace: comments inside d; return the omission spots."""
	units, src = d.units(), d.src
	where = {}
	for k, u in enumerate(units):
		for t in u.toks:
			where[t.i] = k
	spots = set()
	for c in src.comments:
		if not (d.start <= c.idx <= d.end) or not c.marker:
			continue
		if c.before or c.after:
			for u in units:
				if (c.before and c.line in u.lines) or (c.after and c.end in u.lines):
					u.marked = True
			continue
		k = where.get(c.idx)
		if k is None:		# after the last token: nothing follows
			spots.add(len(units))
			continue
		u = units[k]
		direct = src.toks[c.idx].line == c.end + 1
		if not direct or u.kind == 'close':
			spots.add(k)
		elif u.toks[0].i != c.idx or k == 0:
			u.marked = True			# inside a statement, or the function's head
		else:
			for v in units[k:extent(units, k) + 1]:
				v.marked = True
	return spots


def head_key(u, renames=None):
	"""A function head without its storage and attribute words."""
	out, toks, i = [], u.toks, 0
	while i < len(toks):
		t = toks[i].text
		if t == '__attribute__' or t in ('__section', '__aligned', '__acquires', '__releases',
						 '__must_hold'):
			j = match_close(toks, i + 1) if i + 1 < len(toks) and toks[i + 1].text == '(' \
				else i
			i = (j if j is not None else i) + 1
			continue
		if t == 'template' and i + 1 < len(toks) and toks[i + 1].text == '<':
			depth = 0
			for j in range(i + 1, len(toks)):
				depth += {'<': 1, '>': -1}.get(toks[j].text, 0)
				if depth == 0:
					break
			i = j + 1
			continue
		if t in HEAD_NOISE or (t == '"C"' and out == []):
			i += 1
			continue
		out.append(rename(t, renames))
		i += 1
	s = ' '.join(out)
	return re.sub(r'\( void \)', '( )', s)


def rename(t, renames):
	if t == 'nullptr':
		return 'NULL'
	return renames.get(t, t) if renames else t


def port_keys(units, renames):
	keys = []
	for k, u in enumerate(units):
		if k == 0 and u.kind == 'head':
			keys.append(head_key(u, renames))
		else:
			key = ' '.join(rename(t.text, renames) for t in u.toks)
			# C++17's attribute is the kernel's fallthrough pseudo-keyword
			keys.append(key.replace('[ [ fallthrough ] ]', 'fallthrough'))
	return keys


# "matches" only while marked deviations absorb at most two upstream statements or this share
# of them; above it the port is mostly its own code there (docs/porting.md).
ABSORBED_MAX = 0.30
ABSORBED_SMALL = 2	# a function this small may absorb two statements


class Verdict:
	def __init__(self, word, n=0, hunks=None, up=None, why=None, counts=None):
		self.word, self.n, self.hunks, self.up, self.why = word, n, hunks or [], up, why
		# (upstream statements compared, matched, absorbed by marked deviations)
		self.counts = counts

	def __str__(self):
		what = {'matches': 'marked deviation', 'differs': 'line',
			'deviates': 'marked deviation'}.get(self.word)
		if self.why:
			return '%s (%s)' % (self.word, self.why)
		if not what or (not self.n and self.word != 'deviates'):
			return self.word
		s = '%d %s%s' % (self.n, what, '' if self.n == 1 else 's')
		if self.counts and self.word in ('matches', 'deviates'):
			total, same, absorbed = self.counts
			s += '; %d of %d statements matched, %d absorbed' % (same, total, absorbed)
		return '%s (%s)' % (self.word, s)


def compare(pdef, pkeys, spots, udef):
	punits, uunits = pdef.units(), udef.units()
	ukeys = [head_key(u) if k == 0 and u.kind == 'head' else u.key for k, u in enumerate(uunits)]
	sm = difflib.SequenceMatcher(None, pkeys, ukeys, autojunk=False)
	marked = nlines = same = absorbed = 0
	hunks = []
	for tag, i1, i2, j1, j2 in sm.get_opcodes():
		if tag == 'equal':
			same += j2 - j1
			continue
		side = punits[i1:i2]
		ok = (side and all(u.marked for u in side)) or (not side and i1 in spots)
		if ok:
			marked += 1
			absorbed += j2 - j1
		else:
			nlines += sum(1 for u in side if not u.marked) + (j2 - j1)
		hunks.append((ok, i1, i2, j1, j2))
	counts = (len(ukeys), same, absorbed)
	if nlines:
		return Verdict('differs', nlines, hunks, udef, counts=counts), sm.ratio()
	small = max(ABSORBED_SMALL, ABSORBED_MAX * len(ukeys))
	word = 'deviates' if absorbed > small else 'matches'
	return Verdict(word, marked, hunks, udef, counts=counts), sm.ratio()


class PortOf:
	"""One "Port of" comment, as read."""

	def __init__(self, src, c, text):
		self.src, self.c = src, c
		m = re.search(r'Port\s+of', c.raw)
		self.line = c.line + c.raw[:m.start() if m else 0].count('\n')
		self.text = text
		self.names, self.paths, self.claim = [], [], '-'
		pm = PATH_RE.search(text)
		head = text[:pm.start()] if pm else text
		self.names = [m.group(1) for m in NAME_RE.finditer(head)
			      if not text[m.end():m.end() + 2] == "'s"]
		self.partial = [m.group(1) for m in NAME_RE.finditer(head)
				if text[m.end():m.end() + 2] == "'s"]
		if pm:		# "a.c + b.c, v6.16": every file, the note after the last
			stop = text.find(':', pm.start())
			more = list(PATH_RE.finditer(text, pm.start(), stop if stop > 0 else len(text)))
			self.paths = [m.group(1) for m in more]
			self.claim = version_note(text[more[-1].end():])


def version_note(rest):
	"""The version the comment claims, from what follows its file name."""
	rest = rest.strip()
	m = re.match(r'\(([^)]*)\)', rest)
	if m:
		note = m.group(1)
	elif rest.startswith(','):
		note = re.split(r'[:;(]|\.(?:\s|$)', rest[1:])[0].strip()
		m = re.match(r'v\d+(?:\.\d+)*', note)
		note = m.group() if m else note
	else:
		return '-'
	if not re.search(r'\bv\d|[0-9a-f]{12}|series|after|before|\b20\d\d\b|CONFIG_', note):
		return '-'
	return note if len(note) <= 28 else note[:25] + '...'


def read_renames(root):
	"""docs/porting.md's rename table: {scope: {port name: upstream name}}."""
	path = os.path.join(root, 'docs', 'porting.md')
	out = {}
	if not os.path.isfile(path):
		return out
	with open(path, encoding='utf-8', errors='replace') as f:
		lines = f.read().split('\n')
	k = lines.index(RENAME_HEADING) if RENAME_HEADING in lines else len(lines)
	for n, line in enumerate(lines[k + 1:], k + 2):
		if line.startswith('#'):
			break
		if not line.startswith('|') or re.match(r'\|\s*(pokelab|-+)\s*\|', line):
			continue
		cells = [c.strip().strip('`').strip() for c in line.strip().strip('|').split('|')]
		if len(cells) < 3 or not re.fullmatch(r'[A-Za-z_]\w*', cells[0]) or \
				not re.fullmatch(r'[A-Za-z_]\w*', cells[1]):
			raise Usage('docs/porting.md:%d: a rename row is | `port` | `upstream` | '
				    'functions or * | ..., not %r' % (n, line))
		for scope in re.split(r'[,\s]+', cells[2].replace('`', '')):
			if scope:
				out.setdefault(scope.rstrip('()'), {})[cells[0]] = cells[1]
	return out


def renames_for(renames, fname):
	r = dict(renames.get('*', {}))
	r.update(renames.get(fname, {}))
	return r


def scan_port(root):
	"""Every Port-of comment in the source files under root."""
	srcs = []
	for d, dirs, files in os.walk(root):
		if IGNORE_MARK in files:
			dirs[:] = []
			continue
		dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith('build') and
				 not os.path.exists(os.path.join(d, x, 'meson-private')))
		for f in sorted(files):
			if f.endswith(SOURCE_EXT):
				p = os.path.join(d, f)
				text = read_source(p)
				# a comment's text keeps its words: a file without the
				# word has no Port-of comment, and most files are not
				# read as tokens (a port-patch run reads the tree twice)
				if 'Port' in text:
					srcs.append(Source(p, os.path.relpath(p, root), text))
	ports = []
	for s in srcs:
		for c in s.comments:
			m = re.search(r'\bPort of\b', c.text)
			if m:
				ports.append(PortOf(s, c, c.text[m.end():].strip()))
	return ports


class Row:
	def __init__(self, name, pdef, port):
		self.name, self.pdef, self.port, self.verdicts = name, pdef, port, []


def tie(ports, renames):
	"""Tie each comment to the definitions it names: rows, and what is left unparsed."""
	rows, loose = [], []
	by_file = {}
	for p in ports:
		by_file.setdefault(p.src.rel, []).append(p)
	for plist in by_file.values():
		for k, p in enumerate(plist):
			hi = plist[k + 1].c.idx if k + 1 < len(plist) else len(p.src.toks)
			if not p.names:
				why = 'names no function' if not p.partial else \
					'a part of %s(), not a whole function' % p.partial[0]
				loose.append((p, None, why))
				continue
			if not p.paths:
				loose.append((p, None, 'names no upstream file'))
				continue
			for name in p.names:
				pat = re.compile(re.escape(name).replace(r'\*', r'\w*') + '$')
				scoped = renames_for(renames, name)

				def want(x, pat=pat, scoped=scoped):
					return bool(pat.match(x) or pat.match(scoped.get(x, x)))
				defs = find_defs(p.src, want, p.c.idx, hi)
				funcs = [d for d in defs if d.kind != 'decl']
				if not funcs:
					nxt = [d.name for d in find_defs(p.src, lambda x: True, p.c.idx, hi)
					       if d.kind == 'func']
					loose.append((p, name, bool(defs), nxt[0] if nxt else None))
					continue
				for d in funcs if '*' in name else funcs[:1]:
					up = renames.get('*', {}).get(d.name, d.name)
					rows.append(Row(up if '*' in name else name, d, p))
	return rows, [x if x[1] is None else (x[0], x[1], untied(*x, rows)) for x in loose]


def untied(p, name, decl, nxt, rows):
	"""Why the comment p's name has no definition to compare."""
	there = sorted((r.pdef.src.rel != p.src.rel, r.pdef.src.rel, r.pdef.line) for r in rows
		       if r.name == name)
	if there:
		return '%s(): %s; compared at %s:%d, under its own Port-of comment' % (
			name, 'on a declaration' if decl else 'no definition follows this comment',
			there[0][1], there[0][2])
	if decl:
		return '%s(): on a declaration, and no definition of it has a Port-of comment' % name
	if nxt:
		return ('%s(): no definition follows (the next is %s(); a port under another name '
			'needs a row in the rename table)' % (name, nxt))
	return '%s(): no definition follows' % name


class Tree:
	def __init__(self, arg):
		label, path = None, arg
		if not os.path.isdir(arg) and '=' in arg:
			label, path = arg.split('=', 1)
		if not os.path.isdir(path):
			raise Usage('--upstream %s: no such directory (want --upstream [LABEL=]DIR, '
				    'an unpacked kernel tree)' % arg)
		self.path = path
		self.version = makefile_version(path) or label or \
			os.path.basename(os.path.normpath(os.path.abspath(path)))
		self.cache = {}

	def source(self, rel):
		if rel not in self.cache:
			p = os.path.join(self.path, rel)
			self.cache[rel] = Source(p, rel) if os.path.isfile(p) else None
		return self.cache[rel]


def makefile_version(path):
	try:
		with open(os.path.join(path, 'Makefile'), encoding='utf-8', errors='replace') as f:
			text = f.read(4096)
	except OSError:
		return None
	v = {}
	for key in ('VERSION', 'PATCHLEVEL', 'SUBLEVEL', 'EXTRAVERSION'):
		m = re.search(r'^%s[ \t]*=[ \t]*(\S*)' % key, text, re.M)
		v[key] = m.group(1) if m else ''
	if not v['VERSION'] or not v['PATCHLEVEL']:
		return None
	s = v['VERSION'] + '.' + v['PATCHLEVEL']
	if v['SUBLEVEL'] and v['SUBLEVEL'] != '0':
		s += '.' + v['SUBLEVEL']
	return s + v['EXTRAVERSION']


def judge(row, tree, spots, pkeys):
	pdef, have, best = row.pdef, False, None
	for rel in row.port.paths:
		src = tree.source(rel)
		if src is None:
			continue
		have = True
		for d in find_defs(src, lambda x: x == row.name, toplevel=True):
			if d.kind == 'decl':
				continue
			# of several (#ifdef) forms, the one closest to the port
			v, ratio = compare(pdef, pkeys, spots, d)
			score = (v.word != 'matches', v.word == 'differs',
				 v.n if v.word == 'differs' else 0, -ratio)
			if best is None or score < best[1]:
				best = (v, score)
		if best:
			break
	if best:
		return best[0]
	if not have:
		return Verdict('no file')
	return Verdict('not in upstream', why=not_upstream_why(row))


# A claim that names a posted series' patch ("series v7", "v7 25/31"), or a
# replay of a fixed bug (alternative/replay_*.cpp): not upstream on purpose.
SERIES_RE = re.compile(r'series|\b\d+/\d+\b')


def not_upstream_why(row):
	if os.path.basename(row.pdef.src.rel).startswith('replay_'):
		return 'a replay of %s' % row.port.claim if row.port.claim != '-' else 'a replay'
	if SERIES_RE.search(row.port.claim):
		return 'posted series'
	return None


def show_diff(row, tree, v, out):
	punits, uunits = row.pdef.units(), v.up.units()
	out.append('--- port  %s:%d %s()' % (row.pdef.src.rel, row.pdef.line, row.name))
	out.append('+++ %-5s %s:%d' % (tree.version, v.up.src.rel, v.up.line))
	for ok, i1, i2, j1, j2 in v.hunks:
		pl = punits[i1].line if i1 < len(punits) else punits[-1].line
		ul = uunits[j1].line if j1 < len(uunits) else uunits[-1].line
		out.append('@@ port %d, %s %d @@%s' % (pl, tree.version, ul,
						  ' marked (userspace:)' if ok else ''))
		if i1 > 0:
			out.append('  ' + punits[i1 - 1].show())
		for u in punits[i1:i2]:
			out.append(('~ ' if u.marked else '- ') + u.show())
		for u in uunits[j1:j2]:
			out.append('+ ' + u.show())
		if i2 < len(punits):
			out.append('  ' + punits[i2].show())


def table(rows, trees):
	head = ['function', 'port', 'upstream', 'claims'] + [t.version for t in trees]
	out = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
	for r in rows:
		cells = ['%s()' % r.name, '%s:%d' % (r.pdef.src.rel, r.pdef.line), r.port.paths[0],
			 r.port.claim] + [str(v) for v in r.verdicts]
		out.append('| ' + ' | '.join(cells) + ' |')
	return out


def summary(rows, loose, trees):
	tied = {id(r.port) for r in rows}
	bare = {id(x[0]) for x in loose} - tied
	out = ['', 'Port-of comments: %d; functions compared: %d, from %d comments.' % (
		len(tied | bare), len(rows), len(tied)), 'Unparsed: %d comments tied to no function, '
	       '%d more names in comments that were tied.' % (len(bare), len(loose) - len(bare))]
	order = ['matches', 'matches (marked deviations)', 'deviates', 'differs', 'not in upstream',
		 'no file']
	for k, t in enumerate(trees):
		count = dict.fromkeys(order, 0)
		for r in rows:
			v = r.verdicts[k]
			count['matches (marked deviations)' if v.word == 'matches' and v.n else v.word] += 1
		out.append('%s (%s): %s.' % (t.version, t.path, ', '.join(
			'%d %s' % (count[w], w) for w in order if count[w])))
	return out


class Parser(argparse.ArgumentParser):
	def error(self, message):
		raise Usage('%s (usage: %s)' % (message, USAGE))


def main(argv):
	ap = Parser(prog='tools/port-drift', usage=USAGE,
		    description='Say which upstream kernel version each ported function matches.')
	ap.add_argument('--upstream', action='append', metavar='[LABEL=]DIR', required=True,
			help='an upstream kernel tree (repeat for several); its version comes from '
			'its Makefile, else LABEL, else its directory name')
	ap.add_argument('--diff', action='store_true',
			help='after the table, the lines of each function that differs')
	ap.add_argument('--function', metavar='NAME', help='only the function NAME')
	ap.add_argument('--root', metavar='SRCROOT',
			default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
			help='the port tree (default: the tree this script is in)')
	args = ap.parse_args(argv)
	if not os.path.isdir(args.root):
		raise Usage('--root %s: no such directory (want --root SRCROOT, a pokelab tree)'
			    % args.root)
	trees = [Tree(a) for a in args.upstream]
	for k, t in enumerate(trees):		# two trees of one version: tell the columns apart
		if any(u.version == t.version for u in trees[:k]):
			t.version += '#%d' % (k + 1)
	renames = read_renames(args.root)
	ports = scan_port(args.root)
	if not ports:
		raise Usage('--root %s: no "Port of NAME(), FILE" comment in its sources '
			    '(want --root SRCROOT, a pokelab tree)' % args.root)
	rows, loose = tie(ports, renames)
	files = sorted({f for p in ports for f in p.paths})
	for t in trees:
		if not any(t.source(f) for f in files):
			raise Usage('--upstream %s: holds none of the %d files the Port-of comments name '
				    '(e.g. %s; want --upstream [LABEL=]DIR, a kernel tree)'
				    % (t.path, len(files), files[0] if files else 'kernel/smp.c'))
	if args.function:
		want = args.function.rstrip('()')
		rows = [r for r in rows if want in (r.name, r.pdef.name)]
		loose = [x for x in loose if x[1] == want or (x[1] is None and want in x[0].names)]
		if not rows and not loose:
			raise Usage('--function %s: no Port-of comment names %s() (want --function NAME, '
				    'a ported function)' % (args.function, want))
	for r in rows:
		spots = mark_units(r.pdef)
		pkeys = port_keys(r.pdef.units(), renames_for(renames, r.name))
		r.verdicts = [judge(r, t, spots, pkeys) for t in trees]
	out = table(rows, trees)
	if loose:
		out += ['', 'unparsed: Port-of comments not tied to a function (%d):' % len(loose)]
		for p, name, why in loose:
			out.append('  %s:%d: %s' % (p.src.rel, p.line, why))
	out += summary(rows, loose, trees)
	if args.diff:
		for r in rows:
			shown = {}
			for t, v in zip(trees, r.verdicts):
				if v.word != 'differs':
					continue
				block = []
				show_diff(r, t, v, block)
				same = [b for b in block if not b.startswith(('+++', '@@'))]
				if tuple(same) in shown:
					out += ['', '%s() against %s: the same lines as against %s'
						% (r.name, t.version, shown[tuple(same)])]
					continue
				shown[tuple(same)] = t.version
				out += [''] + block
	sys.stdout.write('\n'.join(out) + '\n')
	return 0


def run(argv):
	try:
		sys.exit(main(argv))
	except Usage as e:
		sys.stderr.write('port-drift: %s\n' % e)
		sys.exit(2)
	except BrokenPipeError:
		sys.exit(0)
	except KeyboardInterrupt:
		sys.exit(130)
	except Exception as e:		# a bug here, not bad input: say where, in one line
		tb = e.__traceback__
		while tb.tb_next:
			tb = tb.tb_next
		sys.stderr.write('port-drift: internal error: %s: %s (line %d of the script)\n'
				 % (type(e).__name__, e, tb.tb_lineno))
		sys.exit(1)
