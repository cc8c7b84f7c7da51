// SPDX-License-Identifier: GPL-2.0-only
/*
 * Formatting for signal context.
 */
#include <unistd.h>

#include <kernel_shim/sigsafe.h>

namespace kshim {

SigSafeBuf &SigSafeBuf::str(const char *s) noexcept
{
	while (s && *s && len_ < sizeof(buf_) - 1)
		buf_[len_++] = *s++;
	return *this;
}

SigSafeBuf &SigSafeBuf::udec(unsigned long v) noexcept
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n && len_ < sizeof(buf_) - 1)
		buf_[len_++] = tmp[--n];
	return *this;
}

SigSafeBuf &SigSafeBuf::dec(long v) noexcept
{
	if (v < 0)
		str("-");
	return udec(v < 0 ? -(unsigned long)v : (unsigned long)v);
}

SigSafeBuf &SigSafeBuf::hex(unsigned long v) noexcept
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 0xf];
		v >>= 4;
	} while (v);
	str("0x");
	while (n && len_ < sizeof(buf_) - 1)
		buf_[len_++] = tmp[--n];
	return *this;
}

SigSafeBuf &SigSafeBuf::hexBytes(const void *p, size_t n) noexcept
{
	const unsigned char *b = static_cast<const unsigned char *>(p);

	for (size_t i = 0; i < n && len_ < sizeof(buf_) - 4; i++) {
		if (i)
			buf_[len_++] = ' ';
		buf_[len_++] = "0123456789abcdef"[b[i] >> 4];
		buf_[len_++] = "0123456789abcdef"[b[i] & 0xf];
	}
	return *this;
}

const char *SigSafeBuf::c_str() noexcept
{
	buf_[len_] = '\0';
	return buf_;
}

void SigSafeBuf::emit(int fd) noexcept
{
	size_t off = 0;

	while (off < len_) {
		ssize_t r = write(fd, buf_ + off, len_ - off);
		if (r <= 0)
			break;
		off += r;
	}
}

} /* namespace kshim */
