/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Option checks shared by pokelab's commands: a bad value gets one line
 * naming it and the accepted form (exit status 2, command.h).
 */
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace pokelab {

/* A decimal whole number in [@lo, @hi]: "abc", "-1", "0x10", "" or "1e3" name themselves. */
inline CLI::Validator wholeNumber(unsigned long long lo, unsigned long long hi)
{
	return CLI::Validator(
		[lo, hi](std::string &v) -> std::string {
			char *end;
			unsigned long long n;

			errno = 0;
			n = strtoull(v.c_str(), &end, 10);
			if (v.empty() || *end || !isdigit((unsigned char)v[0]) || errno == ERANGE ||
			    n < lo || n > hi)
				return fmt::format("{}: expected a whole number from {} to {}", v, lo,
						   hi);
			return "";
		},
		fmt::format("{}..{}", lo, hi));
}

/* A decimal number in [@lo, @hi] ("0.5", "2"): "nan", "1e400", "" or "x" name themselves. */
inline CLI::Validator decimalNumber(double lo, double hi)
{
	return CLI::Validator(
		[lo, hi](std::string &v) -> std::string {
			char *end;
			double d;

			errno = 0;
			d = strtod(v.c_str(), &end);
			if (v.empty() || *end || errno == ERANGE || !(d >= lo && d <= hi))
				return fmt::format("{}: expected a number from {:g} to {:g}", v, lo,
						   hi);
			return "";
		},
		fmt::format("{:g}..{:g}", lo, hi));
}

/*
 * --timeline-window: the last seconds of a run a timeline keeps, one range
 * for every command that draws one (docs/cli.md), and the default where a
 * command has no reason for another (torture's is 1 s, and its help says why).
 */
inline constexpr double kTimelineWindow = 10;

inline CLI::Validator timelineWindowCheck()
{
	return decimalNumber(0.001, 3600.0);
}

/* An output file's name: "" is refused ("--trace: \"\": empty file name; expected --trace FILE"). */
inline CLI::Validator outputFile(const std::string &opt, const std::string &form = "FILE")
{
	return CLI::Validator(
		[opt, form](std::string &v) -> std::string {
			if (v.empty())
				return fmt::format("\"\": empty file name; expected {} {}", opt,
						   form);
			return "";
		},
		form);
}

/*
 * An input file's name: it must exist and be a regular file we can read; "",
 * a directory or a missing file name themselves and @form ("--module: /tmp:
 * a directory; expected --module FILE.o").
 */
inline CLI::Validator inputFile(const std::string &opt, const std::string &form = "FILE")
{
	return CLI::Validator(
		[opt, form](std::string &v) -> std::string {
			struct stat st;

			if (v.empty())
				return fmt::format("\"\": empty file name; expected {} {}", opt,
						   form);
			if (stat(v.c_str(), &st))
				return fmt::format("{}: {}; expected {} {}", v, strerror(errno),
						   opt, form);
			if (S_ISDIR(st.st_mode))
				return fmt::format("{}: a directory; expected {} {}", v, opt, form);
			if (!S_ISREG(st.st_mode))
				return fmt::format("{}: not a regular file; expected {} {}", v, opt,
						   form);
			if (access(v.c_str(), R_OK))
				return fmt::format("{}: {}; expected {} {}", v, strerror(errno),
						   opt, form);
			return "";
		},
		form);
}

/* An existing directory ("--trace-dir: /x: not a directory; expected --trace-dir DIR"). */
inline CLI::Validator existingDirectory(const std::string &opt, const std::string &form = "DIR")
{
	return CLI::Validator(
		[opt, form](std::string &v) -> std::string {
			struct stat st;

			if (v.empty())
				return fmt::format("\"\": empty directory name; expected {} {}", opt,
						   form);
			if (stat(v.c_str(), &st))
				return fmt::format("{}: {}; expected {} {}", v, strerror(errno),
						   opt, form);
			if (!S_ISDIR(st.st_mode))
				return fmt::format("{}: not a directory; expected {} {}", v, opt,
						   form);
			return "";
		},
		form);
}

} /* namespace pokelab */
