/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Formatting for signal context: fixed buffers, no allocation, no locks,
 * one write(2) per message. Used by BUG/WARN and the trap handlers.
 */
#pragma once

#include <cstddef>

namespace kshim {

class SigSafeBuf
{
public:
	SigSafeBuf &str(const char *s) noexcept;
	SigSafeBuf &dec(long v) noexcept;
	SigSafeBuf &udec(unsigned long v) noexcept;
	SigSafeBuf &hex(unsigned long v) noexcept;	/* 0x-prefixed */
	SigSafeBuf &hexBytes(const void *p, size_t n) noexcept;	/* "e9 12 34" */
	/* write(2) the buffer to @fd (default: stderr). */
	void emit(int fd = 2) noexcept;
	const char *c_str() noexcept;

private:
	char buf_[1024];
	size_t len_ = 0;
};

} /* namespace kshim */
