# SPDX-License-Identifier: GPL-2.0-only
#
# Reading what a kernel developer brings: a `git diff`, `git format-patch`
# files, or an mbox of a series as `b4 am` writes it. The diff itself is
# parsed by unidiff (Debian's python3-unidiff); this file splits mboxes,
# names each message and refuses what is not a patch to the kernel's x86
# tree, one line each (exit 2).

import errno
import os
import re
import select
import stat

try:
	import unidiff
except ImportError:		# checked by the caller, which says what to install
	unidiff = None

MBOX_FROM = re.compile(r'^From \S+ +\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}$', re.M)
COVER_RE = re.compile(r'\[[^\]]*\b0+/\d+\s*\]')


class Bad(Exception):
	"""Bad input: one line, exit status 2."""


class Hunk:
	def __init__(self, patch, path, index, h):
		self.patch, self.path, self.index = patch, path, index
		self.source_start, self.source_length = h.source_start, h.source_length
		self.target_start, self.target_length = h.target_start, h.target_length
		self.section = (h.section_header or '').strip()
		self.lines = [(l.line_type, l.value) for l in h]

	def header(self):
		return '@@ -%d,%d +%d,%d @@' % (self.source_start, self.source_length,
					       self.target_start, self.target_length)

	def old_lines(self):
		return [v for t, v in self.lines if t in (' ', '-')]

	def new_lines(self):
		return [v for t, v in self.lines if t in (' ', '+')]

	def name(self):
		return '%s %s hunk %d (%s)' % (self.patch.name, self.path, self.index + 1, self.header())


class FilePatch:
	def __init__(self, patch, pf):
		self.patch = patch
		self.path = pf.path
		self.added = pf.is_added_file
		self.removed = pf.is_removed_file
		self.hunks = [Hunk(patch, self.path, k, h) for k, h in enumerate(pf)]


class Patch:
	"""One patch: a message of an mbox, a format-patch file, or a plain diff."""

	def __init__(self, name, subject, files):
		self.name, self.subject, self.files = name, subject, files


def _subject(head):
	m = re.search(r'^Subject:[ \t]*(.*(?:\n[ \t]+.*)*)', head, re.M | re.I)
	return re.sub(r'\s+', ' ', m.group(1)).strip() if m else ''


def _messages(path, text):
	"""(name, subject, body) of each message in text."""
	starts = [m.start() for m in MBOX_FROM.finditer(text)]
	if not starts or text[:starts[0]].strip():
		return [(path, '', text)]
	out = []
	for k, s in enumerate(starts):
		e = starts[k + 1] if k + 1 < len(starts) else len(text)
		msg = text[s:e]
		head, _, body = msg.partition('\n\n')
		name = path if len(starts) == 1 else '%s message %d' % (path, k + 1)
		out.append((name, _subject(head), body))
	return out


def _diff_part(body):
	"""The diff of a message: from its first diff header to the signature."""
	m = re.search(r'^(diff --git |--- (a/|/dev/null)|Index: )', body, re.M)
	if not m:
		return None
	diff = body[m.start():]
	sig = re.search(r'^-- \n(?:[\w.+~-]+\n)?\s*\Z', diff, re.M)
	if sig:
		diff = diff[:sig.start()]
	return diff


def _bad_hunk(diff):
	"""', in FILE hunk N (@@ ... @@)': the first hunk unidiff cannot read, found by
	reading the diff up to each next hunk header in turn."""
	lines = diff.split('\n')
	heads = []
	name, n = None, 0
	for k, line in enumerate(lines):
		if line.startswith('+++ '):
			name, n = line[4:].split('\t')[0], 0
			name = name[2:] if name.startswith('b/') else name
		elif line.startswith('@@') and name:
			n += 1
			heads.append((k, name, n, line.split(' @@')[0] + ' @@'))
	for i, (k, name, n, head) in enumerate(heads):
		stop = heads[i + 1][0] if i + 1 < len(heads) else len(lines)
		# up to the next hunk's header, or its file's header lines before it
		while stop > k + 1 and lines[stop - 1].startswith(('diff ', 'index ', '--- ', '+++ ')):
			stop -= 1
		try:
			unidiff.PatchSet('\n'.join(lines[:stop]) + '\n')
		except unidiff.UnidiffParseError:
			return ', in %s hunk %d (%s)' % (name, n, head)
	return ''


# A FIFO or a pipe with nothing to read this long after it is opened has no writer
# (as pokelab timeline's rule).
STREAM_WAIT_S = 5

# Each patch file's bytes as read, for record_key(): a stream reads only once.
RAW = {}


def read_bytes(path):
	"""The bytes of @path: a regular file by name, a FIFO or a pipe (<(git diff),
	/dev/stdin) as a stream to its end, refused after STREAM_WAIT_S with no writer."""
	try:
		fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
	except OSError as e:
		raise Bad('%s: cannot read it: %s (want PATCH, a file git diff or git '
			  'format-patch wrote)' % (path, e.strerror))
	try:
		st = os.fstat(fd)
		if stat.S_ISDIR(st.st_mode):
			raise Bad('%s: a directory (want PATCH, a file git diff or git format-patch '
				  'wrote)' % path)
		chunks, wait = [], STREAM_WAIT_S
		while True:
			try:
				r = os.read(fd, 65536)
			except OSError as e:
				if e.errno != errno.EAGAIN:
					raise Bad('%s: cannot read it: %s' % (path, e.strerror))
				r = None
			if r:
				chunks.append(r)
				wait = None	# a writer is there: read its stream to the end
				continue
			if r == b'' and (stat.S_ISREG(st.st_mode) or wait is None):
				break
			# EAGAIN: a slow writer; b'': none yet (a FIFO no writer opened)
			ready, _, _ = select.select([fd], [], [], None if r is None else wait)
			if not ready:
				raise Bad('%s: nothing to read within %d s (a FIFO or pipe with no '
					  'writer?); want PATCH, a file, or a stream whose writer is '
					  'running' % (path, STREAM_WAIT_S))
			wait = None
		return b''.join(chunks)
	finally:
		os.close(fd)


def read_patches(paths, arch='x86'):
	if unidiff is None:
		raise Bad('python3-unidiff is not installed (apt-get install python3-unidiff, '
			  'or run tools/install-deps.sh)')
	out = []
	for path in paths:
		data = RAW[path] = read_bytes(path)
		if b'\0' in data:
			raise Bad('%s: a binary file, not a patch (want the text git diff or git '
				  'format-patch writes)' % path)
		try:
			text = data.decode('utf-8')
		except UnicodeDecodeError as e:
			raise Bad('%s: not UTF-8 text at byte %d (want a patch as git format-patch '
				  'writes it)' % (path, e.start))
		if '\r\n' in text:
			line = text[:text.index('\r\n')].count('\n') + 1
			raise Bad('%s:%d: CRLF line ends (want LF line ends, as git writes patches; '
				  'dos2unix fixes it)' % (path, line))
		msgs = _messages(path, text)
		for k, (name, subject, body) in enumerate(msgs):
			diff = _diff_part(body)
			if diff is None:
				if COVER_RE.search(subject):
					raise Bad('%s: a cover letter ("%s"), not a patch (want the '
						  'series\' patches alone: b4 am writes the cover letter '
						  'to a file of its own)' % (name, subject[:60]))
				raise Bad('%s: not a patch: no diff in it (want a file git diff, git '
					  'format-patch or b4 am wrote)' % name)
			try:
				ps = unidiff.PatchSet(diff)
			except unidiff.UnidiffParseError as e:
				raise Bad('%s: not a patch unidiff can read: %s%s (want a whole git diff; '
					  'a hunk cut short or edited by hand does not parse)' % (
						  name, e, _bad_hunk(diff)))
			if not len(ps):
				raise Bad('%s: not a patch: no file diff in it' % name)
			p = Patch(name, subject, [])
			for pf in ps:
				_check_file(name, pf, arch)
				p.files.append(FilePatch(p, pf))
			out.append(p)
	if not out:
		raise Bad('no patch given (want pokelab port-patch [OPTIONS] PATCH...)')
	return out


def _check_file(name, pf, arch):
	path = pf.path
	if pf.is_binary_file:
		raise Bad('%s: %s: a binary patch (want text hunks to C code)' % (name, path))
	if pf.is_rename and not len(pf):
		raise Bad('%s: %s: a rename with no hunk (the port follows functions, not file '
			  'names; want a patch that changes code)' % (name, path))
	if not len(pf):
		raise Bad('%s: %s: no hunk (a mode change or an empty file?)' % (name, path))
	m = re.match(r'arch/([^/]+)/', path)
	if m and m.group(1) != arch:
		raise Bad('%s: %s: another architecture\'s file (pokelab ports arch/%s only)'
			  % (name, path, arch))
