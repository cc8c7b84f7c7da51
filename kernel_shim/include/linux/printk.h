/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * printk levels.
 *
 * CUSTOM: include/linux/printk.h on fmt. Messages go to stderr with the
 * level's name ("pokelab: <level>: ..."), except pr_info/pr_cont which go
 * to stdout, the console of a demo.
 * userspace: format strings use fmt's "{}" syntax, not printf's; %pS is
 * kshim::symbolize(). Task context only: not async-signal-safe (use BUG/WARN
 * or kshim::sigsafe in signal paths).
 */
#pragma once

#include <cstdio>

#include <fmt/core.h>

#define pr_emerg(...) fmt::print(stderr, "pokelab: emerg: {}", fmt::format(__VA_ARGS__))
#define pr_crit(...) fmt::print(stderr, "pokelab: crit: {}", fmt::format(__VA_ARGS__))
#define pr_err(...) fmt::print(stderr, "pokelab: error: {}", fmt::format(__VA_ARGS__))
#define pr_warn(...) fmt::print(stderr, "pokelab: warning: {}", fmt::format(__VA_ARGS__))
#define pr_notice(...) fmt::print(stderr, "{}", fmt::format(__VA_ARGS__))
#define pr_info(...) fmt::print(stdout, "{}", fmt::format(__VA_ARGS__))
#define pr_debug(...) do { } while (0)
