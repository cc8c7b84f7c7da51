// SPDX-License-Identifier: GPL-2.0-only
/*
 * Output files: written under a fresh name beside the final one and
 * renamed into place only when complete, so that no output is ever left
 * half-written, followed or clobbered (trace_output.h, docs/tracing.md's
 * Errors). Every output of the tools goes through here.
 */
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/trace_output.h>

namespace kshim {

std::string outputDir(const std::string &path)
{
	size_t slash = path.find_last_of('/');

	if (slash == std::string::npos)
		return ".";
	return slash ? path.substr(0, slash) : "/";
}

namespace {

std::string baseOf(const std::string &path)
{
	size_t slash = path.find_last_of('/');

	return slash == std::string::npos ? path : path.substr(slash + 1);
}

/* DIR/.BASE.XXXXXX names, tried until one is free. */
std::string freshName(const std::string &path)
{
	static std::atomic<unsigned long> counter;
	unsigned long n = (unsigned long)getpid() * 1000003ul + clockNs() + counter++;
	/* ".NAME.XXXXXX" must stay within NAME_MAX (255) for a NAME that does */
	std::string base = baseOf(path).substr(0, 255 - 8);

	return fmt::format("{}/.{}.{:06x}", outputDir(path), base, n & 0xffffff);
}

/*
 * Create a fresh named file next to @path with O_CREAT|O_EXCL|O_NOFOLLOW so
 * that an existing name (a file, a symlink someone planted) is never
 * followed, truncated or reused: another suffix is tried instead. Returns
 * the fd and sets *@tmp, or -1 with errno.
 */
int createFresh(const std::string &path, std::string *tmp)
{
	for (unsigned int tries = 0; tries < 100; tries++) {
		std::string name = freshName(path);
		int fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0644);

		if (fd >= 0) {
			*tmp = name;
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/* @path may be replaced by rename(): absent, or a regular file (not followed). */
bool replaceable(const std::string &path, std::string *err)
{
	struct stat st;

	if (lstat(path.c_str(), &st) || S_ISREG(st.st_mode))
		return true;
	*err = fmt::format("'{}' exists and is not a regular file (a {}); the output is written "
			   "to a new file and renamed into place, so give a file path", path,
			   S_ISDIR(st.st_mode)   ? "directory"
			   : S_ISLNK(st.st_mode) ? "symbolic link"
			   : S_ISFIFO(st.st_mode) ? "FIFO"
						  : "device or socket");
	return false;
}

/* An unnamed file in @dir, where the file system has O_TMPFILE. */
int unnamedIn(const std::string &dir)
{
	return ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
}

} /* namespace */

OutputFile::~OutputFile()
{
	abort();
}

bool OutputFile::open(const std::string &path, std::string *err)
{
	abort();
	if (path.empty()) {
		*err = "empty output file name; expected a path to a regular file";
		return false;
	}
	if (path == "-") {
		*err = "'-': outputs are files, never standard output; expected a path to a "
		       "regular file (./- for a file named -)";
		return false;
	}
	if (baseOf(path).size() > 255) {
		*err = fmt::format("'{}': file name too long ({} bytes; at most 255)", path,
				   baseOf(path).size());
		return false;
	}
	if (!replaceable(path, err))
		return false;
	path_ = path;
	errno_ = 0;
	fd_ = unnamedIn(outputDir(path));
	named_ = fd_ < 0;
	if (named_)
		fd_ = createFresh(path, &tmp_);
	if (fd_ < 0) {
		int e = errno;
		struct stat st;

		/* ENOENT from a directory that is there: it takes no new files (/proc, /sys) */
		if (e == ENOENT && !stat(outputDir(path).c_str(), &st) && S_ISDIR(st.st_mode))
			*err = fmt::format("cannot write '{}': its directory, {}, takes no new "
					   "files (the output is written to a new file there and "
					   "renamed into place); expected a path in a writable "
					   "directory",
					   path, outputDir(path));
		else if (e == ENOENT && stat(outputDir(path).c_str(), &st))
			*err = fmt::format("cannot write '{}': its directory, {}, does not exist; "
					   "expected a path in an existing directory", path,
					   outputDir(path));
		else
			*err = fmt::format("cannot write '{}' (a new file in {}): {}", path,
					   outputDir(path), strerror(e));
		return false;
	}
	return true;
}

bool OutputFile::write(const void *data, size_t n)
{
	size_t done = 0;

	while (!errno_ && done < n) {
		ssize_t r = ::write(fd_, (const char *)data + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			errno_ = r < 0 ? errno : ENOSPC;
		else
			done += r;
	}
	return !errno_;
}

bool OutputFile::commit(std::string *err)
{
	bool ok = fd_ >= 0 && !errno_;

	if (ok && fsync(fd_))
		errno_ = errno, ok = false;
	/* the unnamed file gets a fresh name: linkat() never replaces an existing one */
	for (unsigned int tries = 0; ok && !named_; tries++) {
		std::string name = freshName(path_);
		std::string proc = fmt::format("/proc/self/fd/{}", fd_);

		if (!linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW)) {
			tmp_ = name;
			named_ = true;
		} else if (errno != EEXIST || tries == 100) {
			/* no /proc to link through: copy the data into a fresh named file */
			ok = copyToFresh();
		}
	}
	if (fd_ >= 0 && close(fd_) && ok)
		errno_ = errno, ok = false;
	fd_ = -1;
	if (!ok)
		*err = fmt::format("cannot write '{}': {}", path_, strerror(errno_ ? errno_ : EBADF));
	/* Checked again: a symlink or device put there meanwhile is not replaced either. */
	else if (!replaceable(path_, err))
		ok = false;
	else if (rename(tmp_.c_str(), path_.c_str())) {
		*err = fmt::format("cannot write '{}': {}", path_, strerror(errno));
		ok = false;
	}
	if (!ok && named_)
		unlink(tmp_.c_str());
	named_ = false;
	tmp_.clear();
	return ok;
}

bool OutputFile::copyToFresh()
{
	static char buf[1 << 16];
	int to = createFresh(path_, &tmp_);
	bool ok = to >= 0 && lseek(fd_, 0, SEEK_SET) == 0;

	while (ok) {
		ssize_t r = read(fd_, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ok = r == 0;
			break;
		}
		for (ssize_t done = 0; ok && done < r;) {
			ssize_t w = ::write(to, buf + done, r - done);

			if (w < 0 && errno == EINTR)
				continue;
			ok = w > 0;
			done += ok ? w : 0;
		}
	}
	ok = ok && !fsync(to);
	if (!ok)
		errno_ = errno ? errno : EIO;
	if (to >= 0) {
		close(to);
		named_ = true;	/* removed by commit() if !ok */
	}
	return ok;
}

void OutputFile::abort() noexcept
{
	if (fd_ >= 0)
		close(fd_);
	if (named_ && !tmp_.empty())
		unlink(tmp_.c_str());
	fd_ = -1;
	named_ = false;
	tmp_.clear();
}

int scratchFile(const std::string &dir, std::string *err)
{
	int fd = unnamedIn(dir);
	std::string tmp;

	if (fd < 0) {
		fd = createFresh(dir + "/scratch", &tmp);
		if (fd >= 0)
			unlink(tmp.c_str());
	}
	if (fd < 0)
		*err = fmt::format("cannot create a scratch file in {}: {}", dir, strerror(errno));
	return fd;
}

bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err)
{
	OutputFile f;

	if (!f.open(path, err))
		return false;
	f.write(data);
	return f.commit(err);
}

bool checkWritable(const std::string &path, std::string *err)
{
	OutputFile f;

	return f.open(path, err);
}

bool sameOutput(const std::string &a, const std::string &b)
{
	struct stat sa, sb;

	/* Existing files: the same inode. */
	if (!stat(a.c_str(), &sa) && !stat(b.c_str(), &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	/* Otherwise: the same name in the same directory (by inode). */
	if (baseOf(a) != baseOf(b) || stat(outputDir(a).c_str(), &sa) ||
	    stat(outputDir(b).c_str(), &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} /* namespace kshim */
