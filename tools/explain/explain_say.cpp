// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab explain's text: say() wraps each line at the terminal's 100
 * columns (colour escapes take none), the "Read next:" paragraph with the
 * port's FILE:LINE of each function it names, and the mute a Ctrl-C inside
 * a batch sets (explain.h).
 */
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/port_map.h>

#include "explain/explain.h"

namespace pokelab::explain {

bool sayMuted;

namespace {

/* Columns @s takes on a terminal: each byte but a colour escape's (UTF-8 continuations skipped). */
unsigned int columns(const std::string &s, size_t from, size_t to)
{
	unsigned int n = 0;

	for (size_t i = from; i < to; i++) {
		if (s[i] == '\033') {
			while (i < to && s[i] != 'm')
				i++;
			continue;
		}
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	}
	return n;
}

/* Where @s's next piece (from @from) ends: @limit columns at most, at a space if there is one. */
size_t pieceEnd(const std::string &s, size_t from, unsigned int limit)
{
	size_t end = from, lastSpace = std::string::npos;
	unsigned int cols = 0;

	while (end < s.size()) {
		unsigned int c = columns(s, end, end + 1);

		if (cols + c > limit)
			break;
		if (s[end] == ' ')
			lastSpace = end;
		cols += c;
		end++;
	}
	if (end == s.size())
		return end;
	/* a break at the space itself: the space ends this piece */
	if (s[end] == ' ')
		return end;
	if (lastSpace != std::string::npos && s.find_first_not_of(' ', from) < lastSpace)
		return lastSpace;
	return end > from ? end : from + 1;	/* a word wider than the line: cut it */
}

std::string pending;	/* say()'s text that waits for its newline */

} /* namespace */

std::string wrapLine(const std::string &line, unsigned int width, int hang)
{
	size_t lead = line.find_first_not_of(' ');
	std::string out;
	size_t at = 0;

	if (lead == std::string::npos || columns(line, 0, line.size()) <= width)
		return line;
	if (hang < 0) {
		size_t t = line.find_first_not_of("0123456789", lead);

		if (t > lead && t + 1 < line.size() && line[t] == '.' && line[t + 1] == ' ')
			hang = (int)t + 2;	/* under the text of "  3. ..." */
		else
			hang = lead ? (int)lead + 2 : 0;
	}
	if ((unsigned int)hang >= width / 2)
		hang = 0;
	for (bool first = true; at < line.size(); first = false) {
		unsigned int indent = first ? 0 : hang;
		size_t end = pieceEnd(line, at, width - indent);

		out += (first ? "" : "\n" + std::string(indent, ' ')) + line.substr(at, end - at);
		/* the spaces at a break go */
		at = line.find_first_not_of(' ', end);
		if (at == std::string::npos)
			break;
		while (!out.empty() && out.back() == ' ')
			out.pop_back();
	}
	return out;
}

void sayText(const std::string &s)
{
	size_t nl;

	if (sayMuted)
		return;
	pending += s;
	while ((nl = pending.find('\n')) != std::string::npos) {
		std::string line = wrapLine(pending.substr(0, nl));

		std::fwrite(line.data(), 1, line.size(), stdout);
		std::fputc('\n', stdout);
		pending.erase(0, nl + 1);
	}
}

void sayReadNext(const std::string &text)
{
	std::vector<std::string> seen;
	std::string ports;

	sayText("\nRead next: " + text);
	for (size_t i = 0; (i = text.find("()", i)) != std::string::npos; i += 2) {
		size_t b = i;

		while (b > 0 && (std::isalnum((unsigned char)text[b - 1]) || text[b - 1] == '_'))
			b--;
		std::string name = text.substr(b, i - b);
		const char *at = kshim::portWhere(name.c_str());

		if (name.empty() || !at || std::find(seen.begin(), seen.end(), name) != seen.end())
			continue;
		seen.push_back(name);
		ports += fmt::format("  in the port: {}() {}\n", name, at);
	}
	sayText(ports);
}

void sayFlush()
{
	std::string line = wrapLine(pending);

	std::fwrite(line.data(), 1, line.size(), stdout);
	pending.clear();
	std::fflush(stdout);
}

} /* namespace pokelab::explain */
