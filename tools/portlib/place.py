# SPDX-License-Identifier: GPL-2.0-only
#
# Placing one kernel hunk on the port. The hunk is applied to the upstream
# file (so it must apply to 7.3); the items it changed are found by pairing
# the file's top-level items before and after, comments ignored; each change
# is carried to the port definition that the Port-of map names for the item,
# as a three-way merge of code tokens:
#
#	B  the upstream item before the hunk	T  after the hunk
#	O  the port's definition, its tokens read as upstream's (renames applied)
#
# B is aligned with O the way port-drift compares them (statements first,
# then tokens inside a marked replacement), so that the port's marked lines
# (userspace:, series, BUSTED switches, hooks) are skipped. Each B -> T
# change lands where its B tokens, or its anchors for an insertion, are
# found in O; a change of whole statements that the port keeps in marked
# form replaces those statements; anything else is a conflict. The text
# written is the hunk's own, upstream names turned into the port's.

import difflib
import re

from . import drift
from . import kitems

# BUSTED switches woven into an upstream condition: "&& !BUSTED(X)", "!BUSTED(X) &&"
BUSTED_RE = re.compile(r'BUSTED$')


class Outcome:
	"""What became of one change of a hunk: applied, nothing to do, no port, conflict."""

	def __init__(self, word, what, where=None, detail=None, entry=None):
		self.word, self.what, self.where, self.detail, self.entry = word, what, where, detail, entry


class Edit:
	__slots__ = ('start', 'end', 'text', 'line', 'src')

	def __init__(self, start, end, text, line, src=None):
		self.start, self.end, self.text, self.line, self.src = start, end, text, line, src


def line_start(text, pos):
	return text.rfind('\n', 0, pos) + 1


def line_end(text, pos):
	e = text.find('\n', pos)
	return len(text) if e < 0 else e


def _only_space(s):
	return not s.strip()


def _rest_is_comment(src, tok):
	"""After tok, up to the end of its line, only whitespace and comments?"""
	text = src.text
	e = line_end(text, tok.end)
	nxt = src.toks[tok.i + 1] if tok.i + 1 < len(src.toks) else None
	return nxt is None or nxt.start >= e


def _first_on_line(src, tok):
	text = src.text
	return _only_space(text[line_start(text, tok.start):tok.start])


class Side:
	"""One side of the merge: a definition's code tokens, read as upstream names."""

	def __init__(self, src, start, end, renames=None, skip=None):
		self.src = src
		self.toks = []
		skip = skip or set()
		for t in src.toks[start:end + 1]:
			if t.i in skip:
				continue
			self.toks.append(t)
		self.keys = [drift.rename(t.text, renames) for t in self.toks]


def _busted_skips(src, start, end):
	"""Token indexes of the BUSTED conjuncts woven into upstream conditions."""
	toks, skip = src.toks, set()
	for i in range(start, end + 1):
		if toks[i].text != 'BUSTED' or i + 1 > end or toks[i + 1].text != '(':
			continue
		close = drift.match_close(toks, i + 1)
		if close is None:
			continue
		lo, hi = i, close
		if hi + 1 <= end and toks[hi + 1].text == '?':
			# "BUSTED(X) ? broken : upstream's": upstream's expression stands alone
			depth, j = 0, hi + 2
			while j <= end:
				x = toks[j].text
				if x in ('(', '[', '{'):
					depth += 1
				elif x in (')', ']', '}'):
					depth -= 1
				elif x == ':' and depth == 0:
					break
				j += 1
			if j <= end:
				skip.update(range(lo, j + 1))
			continue
		if lo - 1 >= start and toks[lo - 1].text == '!':
			lo -= 1
		if lo - 1 >= start and toks[lo - 1].text in ('&&', '||'):
			lo -= 1
		elif hi + 1 <= end and toks[hi + 1].text in ('&&', '||'):
			hi += 1
		else:
			continue			# a BUSTED() standing alone: a statement of its own
		skip.update(range(lo, hi + 1))
	return skip


def _units_of(src, start, end):
	d = drift.Def(src, '', start, end, 'func')
	return d


class Alignment:
	"""B's tokens mapped onto the port definition's, statement by statement."""

	def __init__(self, bsrc, bitem, entry, renames):
		self.entry = entry
		psrc = entry.src
		self.psrc = psrc
		pdef = drift.Def(psrc, entry.name, entry.start, entry.end,
				 'macro' if entry.kind == 'macro' else 'func')
		bdef = drift.Def(bsrc, bitem.name, bitem.start, bitem.end,
				 'macro' if bitem.kind == 'macro' else 'func')
		self.pdef, self.bdef = pdef, bdef
		spots = drift.mark_units(pdef)
		self.spots = spots
		punits, bunits = pdef.units(), bdef.units()
		pkeys = drift.port_keys(punits, renames)
		bkeys = [drift.head_key(u) if k == 0 and u.kind == 'head' else u.key
			 for k, u in enumerate(bunits)]
		skip = _busted_skips(psrc, entry.start, entry.end)
		self.map = {}		# B token index (in bsrc) -> port token index (in psrc)
		self.bunit_of = {}	# B token index -> B unit index
		self.punit_of = {}	# port token index -> port unit index
		self.bcorr = {}		# B unit index -> list of port unit indexes
		self.punits, self.bunits = punits, bunits
		for k, u in enumerate(bunits):
			for t in u.toks:
				self.bunit_of[t.i] = k
		for k, u in enumerate(punits):
			for t in u.toks:
				self.punit_of[t.i] = k
		self.skip = skip
		self.absorbed = {}
		if entry.fragment:
			self._fragment(renames)
			return
		sm = difflib.SequenceMatcher(None, pkeys, bkeys, autojunk=False)
		# upstream statements a marked deviation stands for: port lines all marked, or
		# a marked omission spot (port-drift's rule); each with the port line that says so
		self.absorbed = {}
		for tag, i1, i2, j1, j2 in sm.get_opcodes():
			# (port, upstream): 'insert' is upstream's alone, 'delete' the port's alone
			if tag in ('insert', 'replace'):
				side = punits[i1:i2]
				if (side and all(u.marked for u in side)) or (not side and i1 in spots):
					at = side[0].line if side else (punits[i1].line if i1 < len(punits)
									else punits[-1].line)
					for j in range(j1, j2):
						self.absorbed[j] = at
			if tag in ('delete', 'insert'):
				continue
			if tag == 'equal':
				for j in range(j1, j2):
					self.bcorr[j] = [i1 + j - j1]
					self._tokens(punits[i1 + j - j1].toks, bunits[j].toks, renames, True)
				continue
			# a replace block: each upstream statement with the port statement most
			# like it, in order; the port's other statements there are its own
			cur = i1
			for j in range(j1, j2):
				bk = ' '.join(t.text for t in bunits[j].toks)
				best, score = None, 0.0
				for i in range(cur, i2):
					pk = ' '.join(drift.rename(t.text, renames) for t in punits[i].toks
						      if t.i not in skip)
					r = difflib.SequenceMatcher(None, pk, bk, autojunk=False).ratio()
					if r > score:
						best, score = i, r
				if best is None or score < (0.75 if punits[best].marked else 0.5) or \
						not _same_lead(punits[best], bunits[j], renames):
					continue
				self.bcorr[j] = [best]
				self._tokens([t for t in punits[best].toks if t.i not in skip],
					     bunits[j].toks, renames, False)
				cur = best + 1

	def _fragment(self, renames):
		"""A helper holding part of the function: the longest token runs in common."""
		ptoks = [t for u in self.punits[1:] for t in u.toks
			 if t.i not in self.skip]
		btoks = [t for u in self.bunits[1:] for t in u.toks]
		pk = [drift.rename(t.text, renames) for t in ptoks]
		bk = [t.text for t in btoks]
		sm = difflib.SequenceMatcher(None, pk, bk, autojunk=False)
		for a, b, n in sm.get_matching_blocks():
			if n < 3:
				continue
			for k in range(n):
				self.map[btoks[b + k].i] = ptoks[a + k].i
		for j, u in enumerate(self.bunits):
			ps = {self.punit_of.get(self.map.get(t.i)) for t in u.toks}
			if len(ps) == 1 and None not in ps:
				self.bcorr[j] = [ps.pop()]

	def _tokens(self, ptoks, btoks, renames, equal):
		pk = [_fold(drift.rename(t.text, renames)) for t in ptoks]
		bk = [_fold(t.text) for t in btoks]
		sm = difflib.SequenceMatcher(None, pk, bk, autojunk=False)
		for a, b, n in sm.get_matching_blocks():
			if not n or (not equal and n < 2 and not _strong(bk[b])):
				continue
			for k in range(n):
				self.map[btoks[b + k].i] = ptoks[a + k].i


def _lead(unit, renames=None):
	"""The word a statement is about: its keyword, the function it calls, what it sets."""
	for t in unit.toks:
		if t.kind == 'id' and t.text not in ('const', 'unsigned', 'struct', 'static', 'int',
						     'long', 'bool', 'void', 'u8', 'u32', 'u64'):
			return drift.rename(t.text, renames)
	return unit.toks[0].text if unit.toks else ''


def _same_lead(punit, bunit, renames):
	"""Statements paired across a marked or drifted stretch lead with like words
	(__smp_text_poke_sync_each_cpu for smp_text_poke_sync_each_cpu; never start
	for flush_tlb_kernel_range)."""
	a, b = _lead(punit, renames), _lead(bunit)
	return a == b or difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.6


def _fold(t):
	return 'fallthrough' if t == 'fallthrough' else t


def _strong(key):
	"""A single token worth anchoring on: an identifier or number, not punctuation."""
	return bool(re.match(r'[A-Za-z_0-9]', key)) and key not in ('if', 'else', 'return', 'int')


def inverse_renames(renames):
	return {v: k for k, v in renames.items()}


# The shim's printk family takes fmt's format (kernel_shim/include/linux/printk.h).
PRINTK = {'pr_emerg', 'pr_alert', 'pr_crit', 'pr_err', 'pr_warn', 'pr_notice', 'pr_info',
	  'pr_debug', 'pr_cont', 'printk', 'pr_err_once', 'pr_warn_once', 'pr_info_once'}
PRINTF_CONV = re.compile(r'%%|%([-+ #0]*)(\d*)(?:\.(\d+))?(?:hh|h|ll|l|z|t|j)?([diouxXcsp])[sSBbK]?')


def fmt_format(literal):
	"""A printk format string literal in fmt's syntax: "%d at %ps" -> "{} at {}"."""
	def conv(m):
		if m.group() == '%%':
			return '%'
		flags, width, prec, c = m.group(1) or '', m.group(2) or '', m.group(3), m.group(4)
		spec = ('#' if '#' in flags else '') + ('0' if '0' in flags else '') + width
		spec += ('.' + prec) if prec and c == 's' else ''
		spec += {'x': 'x', 'X': 'X', 'o': 'o'}.get(c, '')
		return '{:' + spec + '}' if spec else '{}'
	body = literal[1:-1].replace('{', '{{').replace('}', '}}')
	return '"' + PRINTF_CONV.sub(conv, body) + '"'


def _printk_strings(toks):
	"""Indexes (in toks) of the format literals of printk-family calls."""
	out = set()
	for k, t in enumerate(toks):
		if t.kind == 'str' and k >= 2 and toks[k - 1].text == '(' and toks[k - 2].text in PRINTK:
			j = k
			while j < len(toks) and toks[j].kind == 'str':
				out.add(j)
				j += 1
	return out


def render(src, lo_char, hi_char, toks, inv):
	"""src.text[lo_char:hi_char] as the port writes it: upstream names turned into
	the port's, printk formats into fmt's (userspace: the shim's pr_*() take
	fmt's format), and no comments (the port's comments are its own words; a
	comment on a line of its own goes with its line)."""
	text = src.text
	cut = []
	for c in src.comments:
		if c.start < lo_char or c.stop > hi_char:
			continue
		a, b = c.start, c.stop
		ls, le = line_start(text, a), line_end(text, b)
		if _only_space(text[ls:a]) and _only_space(text[b:le]):
			a, b = max(ls, lo_char), min(le + 1, hi_char)
		else:
			while a > lo_char and text[a - 1] in ' \t':
				a -= 1
		cut.append((a, b, ''))
	fmts = _printk_strings(toks)
	for k, t in enumerate(toks):
		if t.start < lo_char or t.end > hi_char:
			continue
		if t.kind == 'id' and t.text in inv:
			cut.append((t.start, t.end, inv[t.text]))
		elif k in fmts and '%' in t.text:
			cut.append((t.start, t.end, fmt_format(t.text)))
	cut.sort()
	out, pos = [], lo_char
	for a, b, r in cut:
		if a < pos:
			continue
		out.append(text[pos:a])
		out.append(r)
		pos = b
	out.append(text[pos:hi_char])
	return ''.join(out)


class Merge:
	"""The edits that carry one item's B -> T change onto its port definition.

	entries: the port definition first, then the helpers that port parts of it
	(fragments); a change goes to the first that holds its code.
	"""

	def __init__(self, bsrc, bitem, tsrc, titem, entries, renames):
		self.bsrc, self.tsrc = bsrc, tsrc
		self.als = [Alignment(bsrc, bitem, e, renames) for e in entries]
		self.al = self.als[0]
		self.entry = entries[0]
		self.inv = inverse_renames(renames)
		self.inv.pop('NULL', None)
		self.btoks = bsrc.toks[bitem.start:bitem.end + 1]
		self.ttoks = tsrc.toks[titem.start:titem.end + 1]
		self.edits, self.conflicts, self.absorbed = [], [], []
		self.dropped = []	# lines of the port's own marked statements a rewrite took
		self.used = set()	# the entries that took an edit

	def regions(self):
		"""B -> T changes: statements first, then tokens inside changed statements."""
		bunits = self.al.bunits
		tdef = drift.Def(self.tsrc, '', self.ttoks[0].i, self.ttoks[-1].i,
				 self.al.bdef.kind)
		tunits = tdef.units()
		bpos = {t.i: k for k, t in enumerate(self.btoks)}
		tpos = {t.i: k for k, t in enumerate(self.ttoks)}

		def keys(units):
			return [drift.head_key(u) if k == 0 and u.kind == 'head' else u.key
				for k, u in enumerate(units)]

		def span(units, lo, hi, pos, total):
			if lo >= hi:
				return (pos[units[lo].toks[0].i] if lo < len(units) else total,) * 2
			return pos[units[lo].toks[0].i], pos[units[hi - 1].toks[-1].i] + 1

		out = []
		bk, tk = keys(bunits), keys(tunits)
		if len(bk) > 1 and len(tk) > 1 and bk[-1] == tk[-1] == '}':
			bk, tk = bk[:-1], tk[:-1]	# the body's close stays the close
		sm = difflib.SequenceMatcher(None, bk, tk, autojunk=False)
		ops = sm.get_opcodes()
		# a statement moved (deleted in one place, the same inserted in another)
		# that the port does not have, a marked deviation standing for it: moving
		# it there is nothing to do (its two halves would delete a line the port
		# keeps and insert one it left out)
		moved = set()
		for a, (tg, j1, j2, k1, k2) in enumerate(ops):
			if tg != 'delete':
				continue
			for b, (tg2, x1, x2, y1, y2) in enumerate(ops):
				if tg2 == 'insert' and b not in moved and bk[j1:j2] == tk[y1:y2] and \
						all(u in self.al.absorbed and u not in self.al.bcorr
						    for u in range(j1, j2)):
					moved |= {a, b}
					self.absorbed.append(self.al.absorbed[j1])
					break
		for n, (tag, j1, j2, k1, k2) in enumerate(ops):
			if tag == 'equal' or n in moved:
				continue
			b1, b2 = span(bunits, j1, j2, bpos, len(self.btoks))
			t1, t2 = span(tunits, k1, k2, tpos, len(self.ttoks))
			if tag != 'replace':
				out.append((b1, b2, t1, t2))
				continue
			bk = [t.text for t in self.btoks[b1:b2]]
			tk = [t.text for t in self.ttoks[t1:t2]]
			sub = difflib.SequenceMatcher(None, bk, tk, autojunk=False)
			if sub.ratio() < 0.6:
				# rewritten rather than edited: the statements go whole
				out.append((b1, b2, t1, t2))
				continue
			for tg, x1, x2, y1, y2 in sub.get_opcodes():
				if tg != 'equal':
					out.append((b1 + x1, b1 + x2, t1 + y1, t1 + y2))
		return out

	def run(self):
		for b1, b2, t1, t2 in self.regions():
			done = False
			for al in self.als:
				self.al = al
				if self._token_level(b1, b2, t1, t2) or self._unit_level(b1, b2, t1, t2):
					self.used.add(id(al.entry))
					done = True
					break
			self.al = self.als[0]
			if done:
				continue
			at = self._absorbed(b1, b2)
			if at is not None:
				self.absorbed.append(at)
				continue
			self.conflicts.append(self._conflict(b1, b2, t1, t2))
		return self

	def _absorbed(self, b1, b2):
		"""The port line of the marked deviation that stands for B[b1:b2], if one does."""
		al = self.al
		lo = b1 if b2 > b1 else max(b1 - 1, 0)
		hi = b2 if b2 > b1 else min(b1 + 1, len(self.btoks))
		units = {al.bunit_of.get(self.btoks[k].i) for k in range(lo, hi)}
		if b2 == b1:
			# an insertion: both neighbours inside one deviation
			units = {u for u in units if u is not None}
		if None in units or not units:
			return None
		if all(u in al.absorbed and u not in al.bcorr for u in units):
			return al.absorbed[min(units)]
		return None

	# -- placing by tokens

	def _token_level(self, b1, b2, t1, t2):
		al, ps = self.al, self.al.psrc
		m = al.map
		if b2 > b1:
			idx = [m.get(self.btoks[k].i) for k in range(b1, b2)]
			if None in idx or any(idx[k + 1] != idx[k] + 1 for k in range(len(idx) - 1)):
				return False
			first, last = ps.toks[idx[0]], ps.toks[idx[-1]]
			self._replace(first, last, t1, t2, b1, b2)
			return True
		if b1 == 0 or b1 >= len(self.btoks):
			return False
		a = m.get(self.btoks[b1 - 1].i)
		z = m.get(self.btoks[b1].i)
		if a is not None and z is not None and z > a:
			self._insert_after(ps.toks[a], t1, t2, b1)
			return True
		# the left neighbour is the port's own (an omission, a hook): before the right one
		if a is None and z is not None and t2 < len(self.ttoks):
			self._insert_before(ps.toks[z], t1, t2)
			return True
		return False

	# -- placing by whole statements

	def _unit_level(self, b1, b2, t1, t2):
		al = self.al
		bu = al.bunit_of
		if b2 > b1:
			u1, u2 = bu.get(self.btoks[b1].i), bu.get(self.btoks[b2 - 1].i)
			if u1 is None or u2 is None:
				return False
			if al.bunits[u1].toks[0].i != self.btoks[b1].i or \
					al.bunits[u2].toks[-1].i != self.btoks[b2 - 1].i:
				return False
			# each upstream statement must have its port statement: one the port
			# split or folded (its tokens in two statements) is not replaced whole
			# (a statement a marked deviation stands for has nothing to replace)
			if any(not al.bcorr.get(u) and u not in al.absorbed for u in range(u1, u2 + 1)
			       if al.bunits[u].kind != 'close'):
				return False
			ports = sorted({p for u in range(u1, u2 + 1) for p in al.bcorr.get(u, [])})
			if not ports:
				return False
			# the port's own marked statements among them go too, and are named
			# (pokelab's own, userspace:; never a posted series' line, which is protocol)
			gaps = [p for p in range(ports[0], ports[-1] + 1) if p not in ports]
			if any(not al.punits[p].marked or self._series(al.punits[p]) for p in gaps):
				return False
			self.dropped += [al.punits[p].line for p in gaps
					 if not any(al.punits[p].line == al.punits[q].line for q in ports)]
			# the port statements must stand for nothing outside the change
			for u, ps in al.bcorr.items():
				if (u < u1 or u > u2) and set(ps) & set(ports):
					return False
			p1, p2 = ports[0], ports[-1]
			p2 = self._extent(p2)
			p1 = self._wrapper(p1, p2)
			first, last = al.punits[p1].toks[0], al.punits[p2].toks[-1]
			self._replace(first, last, t1, t2, b1, b2, whole=True)
			return True
		# an insertion between two statements
		if b1 == 0 or b1 >= len(self.btoks):
			return False
		prev = bu.get(self.btoks[b1 - 1].i)
		if prev is None or al.bunits[prev].toks[-1].i != self.btoks[b1 - 1].i:
			return False
		ports = al.bcorr.get(prev)
		if not ports:
			return False
		p = self._extent(max(ports))
		self._insert_after(al.punits[p].toks[-1], t1, t2, b1, whole=True)
		return True

	def _series(self, unit):
		"""Is unit a line a posted series adds (a "series vN a/b:" comment on or over it)?"""
		lo, hi = unit.toks[0].line, unit.toks[-1].line
		for c in self.al.psrc.comments:
			if c.end >= lo - 6 and c.line <= hi and c.text.startswith('series'):
				return True
		return False

	def _extent(self, p):
		"""A port statement with the block it opens, as far as its close."""
		return drift.extent(self.al.punits, p)

	def _wrapper(self, p1, p2):
		"""A marked BUSTED if-head over exactly p1..p2 goes with them."""
		units = self.al.punits
		if p1 > 0 and units[p1 - 1].kind == 'head' and units[p1 - 1].marked and \
				'BUSTED' in [t.text for t in units[p1 - 1].toks] and \
				drift.extent(units, p1 - 1) == p2:
			return p1 - 1
		return p1

	# -- text

	def _tspan(self, t1, t2, whole):
		"""The hunk's text for T[t1:t2], and whether it is whole lines."""
		ts = self.tsrc
		text = ts.text
		first, last = self.ttoks[t1], self.ttoks[t2 - 1]
		if whole or (_first_on_line(ts, first) and _rest_is_comment(ts, last)):
			lo = line_start(text, first.start)
			hi = line_end(text, last.end) + 1
			return render(ts, lo, min(hi, len(text)), ts.toks, self.inv), True
		return render(ts, first.start, last.end, ts.toks, self.inv), False

	def _gap(self, left, right, t1, t2, b1, b2):
		"""Inside one line: the port's text between left and right becomes the hunk's
		text between the same neighbours, so the hunk's own spacing comes along. Only
		where left and right are the port's tokens for the change's neighbours in the
		kernel's code: a port line that goes on otherwise ("do_sync && !BUSTED(..)"
		for "do_sync") keeps its own text past the change."""
		ps, ts = self.al.psrc, self.tsrc
		if left is None or right is None or t1 == 0 or t2 >= len(self.ttoks):
			return False
		if b1 == 0 or b2 >= len(self.btoks) or \
				self.al.map.get(self.btoks[b1 - 1].i) != left.i or \
				self.al.map.get(self.btoks[b2].i) != right.i:
			return False
		tl, tr = self.ttoks[t1 - 1], self.ttoks[t2]
		if left.line != right.line or tl.line != tr.line:
			return False
		if any(left.end <= c.start < right.start for c in ps.comments) or \
				any(tl.end <= c.start < tr.start for c in ts.comments):
			return False
		new = render(ts, tl.end, tr.start, ts.toks, self.inv)
		self.edits.append(Edit(left.end, right.start, new, left.line, ps))
		return True

	def _replace(self, first, last, t1, t2, b1, b2, whole=False):
		ps = self.al.psrc
		text = ps.text
		lines = whole or (_first_on_line(ps, first) and _rest_is_comment(ps, last))
		if not lines:
			prev = ps.toks[first.i - 1] if first.i > 0 else None
			nxt = ps.toks[last.i + 1] if last.i + 1 < len(ps.toks) else None
			if self._gap(prev, nxt, t1, t2, b1, b2):
				return
		if lines:
			lo, hi = line_start(text, first.start), min(line_end(text, last.end) + 1, len(text))
		elif t2 > t1:
			lo, hi = first.start, last.end		# tokens for tokens
		else:
			# a deletion inside a line takes one side's space with it: "a && b)" loses
			# " && b", "(!a && b)" loses "!a && "
			prev = ps.toks[first.i - 1] if first.i > 0 else None
			nxt = ps.toks[last.i + 1] if last.i + 1 < len(ps.toks) else None
			lo, hi = first.start, last.end
			if prev is not None and prev.line == first.line and prev.end < first.start:
				lo = prev.end
			elif nxt is not None and nxt.line == last.line:
				hi = nxt.start
		if t2 > t1:
			new, tlines = self._tspan(t1, t2, lines)
			if lines and not tlines:
				new = self._as_lines(new, text, lo)
			elif not lines and tlines:
				new, _ = self._tspan(t1, t2, False)
		else:
			new = ''
		self.edits.append(Edit(lo, hi, new, first.line, ps))

	def _as_lines(self, new, text, lo):
		indent = re.match(r'[ \t]*', text[lo:]).group()
		return indent + new.lstrip() + '\n'

	def _insert_after(self, tok, t1, t2, b1, whole=False):
		ps = self.al.psrc
		text = ps.text
		tfirst = self.ttoks[t1]
		tprev = self.ttoks[t1 - 1]
		newline_in_t = tfirst.line != tprev.line
		if (whole or newline_in_t) and _rest_is_comment(ps, tok) and \
				_rest_is_comment(self.tsrc, self.ttoks[t2 - 1]):
			new, _ = self._tspan(t1, t2, True)
			at = min(line_end(text, tok.end) + 1, len(text))
			self.edits.append(Edit(at, at, new, tok.line + 1, ps))
			return
		nxt = ps.toks[tok.i + 1] if tok.i + 1 < len(ps.toks) else None
		if self._gap(tok, nxt, t1, t2, b1, b1):
			return
		lo = tprev.end
		new = render(self.tsrc, lo, self.ttoks[t2 - 1].end, self.tsrc.toks, self.inv)
		self.edits.append(Edit(tok.end, tok.end, new, tok.line, ps))

	def _insert_before(self, tok, t1, t2):
		ps, ts = self.al.psrc, self.tsrc
		text = ps.text
		tnext = self.ttoks[t2]
		if _first_on_line(ps, tok) and _first_on_line(ts, self.ttoks[t1]) and \
				_first_on_line(ts, tnext):
			lo = line_start(ts.text, self.ttoks[t1].start)
			hi = line_start(ts.text, tnext.start)
			new = render(ts, lo, hi, ts.toks, self.inv)
			at = line_start(text, tok.start)
			self.edits.append(Edit(at, at, new, tok.line, ps))
			return
		new = render(ts, self.ttoks[t1].start, tnext.start, ts.toks, self.inv)
		self.edits.append(Edit(tok.start, tok.start, new, tok.line, ps))

	def _conflict(self, b1, b2, t1, t2):
		"""The kernel's expected code and the port's, side by side."""
		al, ps = self.al, self.al.psrc
		lo = max(b1 - 1, 0)
		hi = min(max(b2, b1 + 1), len(self.btoks) - 1)
		bl = sorted({self.btoks[k].line for k in range(lo, hi + 1)})
		near = None
		for k in list(range(b1 - 1, -1, -1)):
			if self.btoks[k].i in al.map:
				near = ps.toks[al.map[self.btoks[k].i]]
				break
		if near is None:
			near = ps.toks[self.entry.start]
		expect = [self.bsrc.text.split('\n')[n - 1] for n in bl[:5]]
		plines = ps.text.split('\n')
		# the port's lines from the same place, blank lines left out, two more than the
		# kernel's so that its own (marked) lines there show
		port = [l for l in plines[near.line - 1:near.line + 11] if l.strip()]
		return (near.line, expect, port[:len(expect) + 2])


def comment_only(old_src, new_src):
	return [t.text for t in old_src.toks] == [t.text for t in new_src.toks]
