/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Option checks shared by pokelab's commands: a bad value gets one line
 * naming it and the accepted form (exit status 2, command.h).
 */
#pragma once

#include <cerrno>
#include <cstdlib>
#include <string>

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

} /* namespace pokelab */
