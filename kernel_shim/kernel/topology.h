/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host's processing units (hwloc), and pinning threads to them.
 */
#pragma once

#ifndef KSHIM_PRIVATE
#error "kernel_shim/kernel/topology.h is private to kernel_shim"
#endif

#include <pthread.h>
#include <string>
#include <vector>

namespace kshim {

class Topology
{
public:
	/* Loads the hwloc topology; returns 0 or -errno with @err. */
	int load(std::string &err);
	void unload();

	/* OS indexes of the PUs allowed to this process and thread, ascending. */
	const std::vector<int> &pus() const { return pus_; }

	/* Pin the calling thread to PU @pu. Returns 0 or -errno. */
	int pinSelf(int pu);
	/* Save / restore the calling thread's binding (CPU 0 at boot/shutdown). */
	void saveSelfBinding();
	void restoreSelfBinding();

private:
	void *topo_ = nullptr;		/* hwloc_topology_t */
	void *saved_ = nullptr;		/* hwloc_bitmap_t */
	std::vector<int> pus_;
};

Topology &topology();

} /* namespace kshim */
