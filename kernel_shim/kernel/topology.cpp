// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host's processing units, through hwloc: the PUs this process may run
 * on (the allowed cpuset, intersected with the boot thread's binding, so a
 * container or taskset that does not start at PU 0 is honoured), and
 * pinning simulated CPUs to them.
 */
#include <cerrno>
#include <cstring>

#include <hwloc.h>

#define KSHIM_PRIVATE
#include "topology.h"

namespace kshim {

Topology &topology()
{
	static Topology t;
	return t;
}

int Topology::load(std::string &err)
{
	hwloc_topology_t topo;

	if (topo_)
		return 0;
	if (hwloc_topology_init(&topo) || hwloc_topology_load(topo)) {
		err = std::string("hwloc: cannot load the topology: ") + strerror(errno);
		return -ENODEV;
	}

	hwloc_bitmap_t set = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
	hwloc_bitmap_t bound = hwloc_bitmap_alloc();
	if (!hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_THREAD) && !hwloc_bitmap_iszero(bound))
		hwloc_bitmap_and(set, set, bound);
	hwloc_bitmap_free(bound);

	pus_.clear();
	unsigned int i;
	hwloc_bitmap_foreach_begin(i, set)
	{
		pus_.push_back(i);
	}
	hwloc_bitmap_foreach_end();
	hwloc_bitmap_free(set);

	if (pus_.empty()) {
		hwloc_topology_destroy(topo);
		err = "hwloc: no PU is allowed to this process";
		return -ENODEV;
	}
	topo_ = topo;
	return 0;
}

void Topology::unload()
{
	if (saved_)
		hwloc_bitmap_free(static_cast<hwloc_bitmap_t>(saved_));
	saved_ = nullptr;
	if (topo_)
		hwloc_topology_destroy(static_cast<hwloc_topology_t>(topo_));
	topo_ = nullptr;
}

int Topology::pinSelf(int pu)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int ret;

	hwloc_bitmap_only(set, pu);
	ret = hwloc_set_cpubind(static_cast<hwloc_topology_t>(topo_), set, HWLOC_CPUBIND_THREAD);
	hwloc_bitmap_free(set);
	return ret ? -errno : 0;
}

void Topology::saveSelfBinding()
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();

	if (hwloc_get_cpubind(static_cast<hwloc_topology_t>(topo_), set, HWLOC_CPUBIND_THREAD)) {
		hwloc_bitmap_free(set);
		return;
	}
	saved_ = set;
}

void Topology::restoreSelfBinding()
{
	if (!saved_)
		return;
	hwloc_set_cpubind(static_cast<hwloc_topology_t>(topo_),
			  static_cast<hwloc_bitmap_t>(saved_), HWLOC_CPUBIND_THREAD);
	hwloc_bitmap_free(static_cast<hwloc_bitmap_t>(saved_));
	saved_ = nullptr;
}

} /* namespace kshim */
