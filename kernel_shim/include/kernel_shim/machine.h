/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What modules tell the machine about themselves, for the machine line.
 */
#pragma once

#include <string>

#include <linux/cpumask.h>

namespace kshim {

/*
 * Add "key value" to the machine line (e.g. "sync ipi", "refs percpu").
 * Boot hooks call it; cleared at shutdown. Task context only.
 */
void setMachineAttr(const std::string &key, const std::string &value);

/* The nohz_full= CPUs of the running machine (empty mask if none). */
const struct cpumask *nohzFullMask() noexcept;

} /* namespace kshim */
