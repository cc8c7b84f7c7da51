/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab torture --module FILE.o: the module writer (torture_module.cpp).
 * CPU 0's decisions load and unload the module (an object built like
 * tests/modules/pokelab_test_mod.o, with its _site, _noinstr_site and _key) and
 * flip its key; every CPU that runs the sites runs the module's as well,
 * with a module reference held. With pokelab_provider_mod.o,
 * pokelab_consumer_mod.o and pokelab_init_mod.o in the same directory, the
 * writer loads, unloads and patches those too, and the CPUs run them
 * through symbol_get() (torture_module.cpp). Task context on CPUs; not async-signal-safe
 * except runModuleSites(), which IRQ work also calls.
 */
#pragma once

#include <string>
#include <vector>

#include <linux/types.h>

namespace pokelab::torture {

/* Load @path (empty: no module writer). 0, or -errno with one line in *@err. CPU 0. */
int moduleWriterStart(const std::string &path, std::string *err);
bool moduleWriterActive();
/* One writer decision: load, try to unload, or flip the key. CPU 0. */
void moduleWriterStep(u64 d);
/* Run the loaded modules, each holding a reference (0 when none is loaded). Any CPU. */
unsigned long runModuleSites(void);
/* Machine quiet: unload; one line per check that failed. CPU 0. */
std::vector<std::string> moduleWriterFinish();
std::string moduleWriterSummary();

} /* namespace pokelab::torture */
