# SPDX-License-Identifier: GPL-2.0-only
#
# The top-level items of a kernel C file (functions, structs, macros,
# declarations and the other preprocessor lines), from drift.Source's
# tokens: what port-patch pairs between a file before and after a hunk, and
# what the name index of tests/port_map reads from the reference trees.

import re

from . import drift

# Words that take a parenthesised argument in a head without being its name.
ATTR_CALLS = {
	'__attribute__', '__section', '__aligned', '__acquires', '__releases', '__must_hold',
	'__printf', '__scanf', '__alias', '__cleanup', '__counted_by', '__diag_push',
	'__no_sanitize_address', '__nocfi', '__retain', 'alignas', '__nonstring',
	'__attribute', '__free', '__guarded_by',
}
AGGREGATE = ('struct', 'union', 'enum')
# Words after a declarator that place or qualify it: "static bool x __ro_after_init = 1;"
DECL_NOISE = re.compile(r'__(ro_after_init|initdata|initconst|read_mostly|maybe_unused|used|weak|'
			r'percpu|aligned\w*|cacheline_aligned\w*|page_aligned\w*|section|noinitdata|'
			r'init|exit|refdata|exitdata)$')


class Item:
	"""One top-level item: its kind, its name, its first and last token."""

	__slots__ = ('kind', 'name', 'start', 'end', 'src')

	def __init__(self, src, kind, name, start, end):
		self.src, self.kind, self.name, self.start, self.end = src, kind, name, start, end

	@property
	def toks(self):
		return self.src.toks[self.start:self.end + 1]

	@property
	def key(self):
		return ' '.join(t.text for t in self.toks)

	@property
	def line(self):
		return self.src.toks[self.start].line

	@property
	def last_line(self):
		return self.src.toks[self.end].line

	def label(self):
		if self.kind == 'func':
			return '%s()' % self.name
		if self.kind == 'macro':
			return '#define %s' % self.name
		if self.kind in AGGREGATE:
			return '%s %s' % (self.kind, self.name)
		return self.name


def _close(toks, i, lo, hi):
	"""port-drift's match_close(), the last token for an unclosed one."""
	j = drift.match_close(toks, i, lo, hi)
	return len(toks) - 1 if j is None else j


def _name_before_paren(toks, lo, hi):
	"""The identifier before the first '(' at depth 0 that is no attribute's."""
	i = lo
	while i < hi:
		t = toks[i]
		if t.text == '(':
			if i > lo and toks[i - 1].kind == 'id' and toks[i - 1].text not in ATTR_CALLS:
				return toks[i - 1].text, i
			i = _close(toks, i, '(', ')') + 1
			continue
		i += 1
	return None, None


def _decl_name(toks, lo, hi):
	"""What a declaration ending in ';' declares."""
	k = lo
	while k < hi and toks[k].text in ('static', 'extern'):
		k += 1
	words = [t for t in toks[k:hi + 1]]
	first = words[0].text if words else ''
	# FOO(type, name); -- DEFINE_PER_CPU(), EXPORT_SYMBOL(), DEFINE_STATIC_KEY_FALSE() ...
	if len(words) >= 3 and words[0].kind == 'id' and words[1].text == '(' and \
			re.fullmatch(r'[A-Z_][A-Z0-9_]*', first):
		close = _close(toks, k + 1, '(', ')')
		inner = [t.text for t in toks[k + 2:close] if t.kind == 'id']
		return first + ':' + (inner[-1] if inner else '')
	name, paren = _name_before_paren(toks, lo, hi + 1)
	depth, last = 0, None
	for t in toks[lo:hi + 1]:
		if t.text in ('(', '[', '{'):
			if depth == 0 and t.text in ('[', '{') and last:
				break
			depth += 1
		elif t.text in (')', ']', '}'):
			depth -= 1
		elif depth == 0 and t.text in ('=', ';', ','):
			break
		elif depth == 0 and t.kind == 'id' and not (last and DECL_NOISE.match(t.text)):
			last = t.text
	if name and paren is not None:
		# a prototype: "void foo(int);" declares foo; "int (*fp)(void);" declares fp
		if toks[paren - 1].text == name and last == name:
			return name
	return last or first


def items(src):
	"""Every top-level item of src in order."""
	toks, out, i, n = src.toks, [], 0, len(src.toks)
	while i < n:
		t = toks[i]
		if t.pp is not None:
			j = i
			while j < n and toks[j].pp == t.pp:
				j += 1
			if j - i > 2 and toks[i + 1].text == 'define':
				out.append(Item(src, 'macro', toks[i + 2].text, i, j - 1))
			else:
				out.append(Item(src, 'pp', ' '.join(x.text for x in toks[i:j]), i, j - 1))
			i = j
			continue
		j, eq, paren0 = i, False, False
		end = None
		while j < n:
			x = toks[j]
			if x.pp is not None and j > i:
				end = j - 1			# a preprocessor line ends a loose run
				break
			if x.text == ';':
				end = j
				break
			if x.text == '=':
				eq = True
			elif x.text == '(':
				paren0 = True
				j = _close(toks, j, '(', ')') + 1
				continue
			elif x.text == '{':
				e = _close(toks, j, '{', '}')
				aggregate = toks[i].text in AGGREGATE or toks[i].text == 'typedef' or \
					any(t.text in AGGREGATE for t in toks[i:j]) and not paren0
				if eq or (aggregate and not paren0) or toks[i].text == 'typedef':
					j = e + 1		# to the declaration's ';'
					continue
				end = e				# a function's body
				break
			j += 1
		if end is None:
			end = n - 1
		kind, name = _classify(toks, i, end)
		out.append(Item(src, kind, name, i, end))
		i = end + 1
	return out


def _classify(toks, lo, hi):
	last = toks[hi].text
	if last == '}':
		name, _ = _name_before_paren(toks, lo, hi)
		if name == 'SYSCALL_DEFINE' or (name and re.fullmatch(r'SYSCALL_DEFINE\d', name)):
			return 'func', toks[lo + 2].text
		return 'func', name or toks[lo].text
	words = [t.text for t in toks[lo:hi + 1]]
	for k, w in enumerate(words[:-1]):
		if w in AGGREGATE and k + 2 < len(words) and words[k + 2] == '{' and \
				'(' not in words[:k]:
			if words[0] == 'typedef':
				break
			return w, words[k + 1]
	return 'decl', _decl_name(toks, lo, hi)


def paired(old, new):
	"""Pair the items of two versions of a file by kind, name and occurrence."""
	def keyed(seq):
		seen, out = {}, []
		for it in seq:
			k = (it.kind, it.name)
			seen[k] = seen.get(k, 0) + 1
			out.append(((it.kind, it.name, seen[k]), it))
		return out
	ok, nk = keyed(old), keyed(new)
	nmap = dict(nk)
	omap = dict(ok)
	pairs = []
	for k, it in ok:
		pairs.append((it, nmap.get(k)))
	for k, it in nk:
		if k not in omap:
			pairs.append((None, it))
	return pairs
