/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CPU count a boot will have, for a command that checks its options
 * against it before anything boots (demo --trace-cpus).
 */
#pragma once

#include <string>
#include <string_view>

namespace kshim {

/*
 * The simulated CPUs boot(@cmdline) brings up: the last valid nr_cpus=N of
 * @cmdline, else max(2, the PUs allowed to this thread). 0 when the PUs
 * cannot be read (hwloc), or nr_cpus= is bad: boot() then says why. No
 * machine may be booted. Task context; not async-signal-safe.
 */
unsigned int bootNrCpus(std::string_view cmdline);

} /* namespace kshim */
