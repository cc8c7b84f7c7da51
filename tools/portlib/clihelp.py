# SPDX-License-Identifier: GPL-2.0-only
#
# The help and the usage errors of pokelab's Python commands (where,
# port-patch) in the form the C++ commands have from CLI11 and
# tools/pokelab.cpp, so that the CLI reads as one: the description, then
# "Usage: PROG CMD [OPTIONS] ...", "Positionals:" and "Options:" with each
# text at column 30, folded at 100 columns, defaults written in the text as
# "(default: ...)", a footer last; a bad argument one line, "pokelab: ...",
# exit status 2, an unknown option answered with the known ones one edit or
# a prefix away (docs/cli.md).

import argparse
import os
import sys

# pokelab --help-all shows a tool's help 2 columns in, as CLI11 shows the others':
# POKELAB_HELP_INDENT=2 then folds it 2 columns sooner
WIDTH = 100 - int(os.environ.get('POKELAB_HELP_INDENT', '0') or 0)
COLUMN = 30	# where an option's text starts, as CLI11 draws it

HELP_TEXT = 'Print this help message and exit'
HELP_ALL_TEXT = ('Show help for every subcommand, and every boot parameter where the command '
		 'takes them')


class Usage(Exception):
	"""Bad input: one line for stderr after "pokelab: ", exit status 2.

	bare: the line names what it is about itself ("--x: unknown option of
	where; ..."), as pokelab's parse errors do; else "where: " leads it, as
	a command's own checks do ("pokelab: timeline: ...")."""

	def __init__(self, msg, bare=False):
		super().__init__(msg)
		self.bare = bare


def fold(text, col, first=None):
	"""text as lines of at most WIDTH columns, continued at column col;
	the first line starts with first (default: col spaces)."""
	lead = ' ' * col if first is None else first
	out, line = [], lead
	for word in text.split():
		if line.strip() and len(line) + 1 + len(word) > WIDTH:
			out.append(line)
			line = ' ' * col
		line += ('' if not line or line.endswith(' ') else ' ') + word
	out.append(line)
	return out


def listed(names, last='and'):
	"""'a', 'a and b', 'a, b and c'"""
	if len(names) < 2:
		return ''.join(names)
	return ', '.join(names[:-1]) + ' %s %s' % (last, names[-1])


def edit_distance(a, b):
	"""Edits (insert, delete, change, swap two neighbours) from a to b."""
	d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
	for i in range(1, len(a) + 1):
		for j in range(1, len(b) + 1):
			d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
				      d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
			if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
				d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
	return d[len(a)][len(b)]


class _Help(argparse.Action):
	def __init__(self, option_strings, dest, help=None):
		super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

	def __call__(self, parser, namespace, values, option_string=None):
		sys.stdout.write(parser.format_help())
		sys.exit(0)


class Parser(argparse.ArgumentParser):
	"""argparse with pokelab's help and errors; command is 'where' or 'port-patch',
	usage the accepted form a missing positional's line gives."""

	def __init__(self, command, usage, description, footer=None):
		super().__init__(prog='pokelab ' + command, usage=usage, description=description,
				 epilog=footer, add_help=False, allow_abbrev=False)
		self.command = command
		self.add_argument('-h', '--help', action=_Help, help=HELP_TEXT)
		# a command without subcommands or boot parameters: its --help
		self.add_argument('--help-all', action=_Help, help=HELP_ALL_TEXT)

	def positional(self, dest, shown, value, help):
		"""A positional taken any number of times, at least once, which the help
		shows as CLI11 would: "shown VALUE ... REQUIRED" ("patch FILE ...")."""
		a = self.add_argument(dest, nargs='*', metavar=shown.upper(), help=help)
		a.at_least_once = True
		a.shown = shown
		a.value = value
		return a

	def format_help(self):
		pos = [a for a in self._actions if not a.option_strings]
		opts = [a for a in self._actions if a.option_strings]
		prog = os.environ.get('POKELAB_PROG') or 'pokelab'
		usage = 'Usage: %s %s%s' % (prog, self.command, ' [OPTIONS]' if opts else '')
		for a in pos:
			many = a.nargs in ('*', '+')
			must = a.nargs == '+' or getattr(a, 'at_least_once', False)
			usage += ' ' + ('%s%s' if must else '[%s%s]') % (getattr(a, 'shown', a.dest),
									 '...' if many else '')
		out = fold(self.description, 0, '') if self.description else []
		out.append(usage)
		for title, acts in (('Positionals:', pos), ('Options:', opts)):
			if not acts:
				continue
			out += ['', title]
			for a in acts:
				if a.option_strings:
					name = ','.join(a.option_strings)
					if a.nargs != 0:
						name += ' ' + (a.metavar or 'TEXT')
				else:
					name = '%s %s%s' % (getattr(a, 'shown', a.dest),
							    getattr(a, 'value', 'TEXT'),
							    ' ...' if a.nargs in ('*', '+') else '')
					if a.nargs == '+' or getattr(a, 'at_least_once', False):
						name += ' REQUIRED'
				name = '  ' + name
				if len(name) >= COLUMN:
					out.append(name)
					out += fold(a.help or '', COLUMN)
				else:
					out += fold(a.help or '', COLUMN, name.ljust(COLUMN))
		if self.epilog:
			out += [''] + fold(self.epilog, 0, '')
		return '\n'.join(out) + '\n\n'

	def print_help(self, file=None):
		(file or sys.stdout).write(self.format_help())

	def near(self, typed):
		"""The long options one edit or a prefix away from typed ('--uptream')."""
		t = typed.split('=', 1)[0].lstrip('-')
		out = []
		for a in self._actions:
			for o in a.option_strings:
				if not o.startswith('--') or o in out:
					continue
				known = o[2:]
				prefix = len(t) >= 2 and (known.startswith(t) or t.startswith(known))
				if t and (prefix or edit_distance(t, known) <= 1):
					out.append(o)
		return out

	def given_twice(self, args):
		"""An option that takes one value, given more than once: refused, as CLI11 does."""
		for a in self._actions:
			if not a.option_strings or a.nargs is not None:
				continue
			vals = []
			for i, x in enumerate(args):
				if x in a.option_strings:
					vals.append(args[i + 1] if i + 1 < len(args) else '')
				elif '=' in x and x.split('=', 1)[0] in a.option_strings:
					vals.append(x.split('=', 1)[1])
			if len(vals) > 1:
				raise Usage('%s: given %s (%s); it may be given once' % (
					a.option_strings[-1], 'twice' if len(vals) == 2 else
					'%d times' % len(vals), listed(vals)), bare=True)

	def parse_args(self, args=None, namespace=None):
		ns, extras = self.parse_known_args(args, namespace)
		self.given_twice(sys.argv[1:] if args is None else args)
		for x in extras:
			if len(x) < 2 or not x.startswith('-'):
				continue
			near = self.near(x)
			name = x.split('=', 1)[0]
			if near:
				raise Usage('%s: unknown option of %s; did you mean %s?' % (
					name, self.command, listed(near, 'or')), bare=True)
			raise Usage("%s: unknown option of %s; see 'pokelab %s --help'" % (
				name, self.command, self.command), bare=True)
		if extras:
			raise Usage("%s: unexpected argument%s of %s; see 'pokelab %s --help'" % (
				listed(extras), 's' if len(extras) > 1 else '', self.command,
				self.command), bare=True)
		return ns

	def error(self, message):
		# argparse's own: "argument --upstream: expected one argument"
		for a in self._actions:
			for o in a.option_strings:
				if message == 'argument %s: expected one argument' % '/'.join(
						a.option_strings):
					raise Usage('%s: no value given; expected %s %s' % (
						o, o, a.metavar or 'TEXT'), bare=True)
		raise Usage("%s; see 'pokelab %s --help'" % (message, self.command))


def report(command, e):
	"""The line of a Usage (or any bad-input exception) e, on stderr; exit status 2."""
	bare = getattr(e, 'bare', False)
	sys.stderr.write('pokelab: %s%s\n' % ('' if bare else command + ': ', e))
	sys.exit(2)
