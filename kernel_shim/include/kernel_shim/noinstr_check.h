/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * objtool's noinstr check on the running program's machine code
 * (kernel_shim/kernel/noinstr_check.cpp): the warnings, one per call or jump
 * that leaves the noinstr section outside an
 * instrumentation_begin()/instrumentation_end() region and per indirect
 * call or jump there, as "FUNC+0xOFF: call to X() leaves .noinstr.text
 * section" / "FUNC+0xOFF: indirect call found in .noinstr.text section".
 * Task context; allocates; reads the executable's symbol table.
 */
#pragma once

#include <string>
#include <vector>

namespace kshim {

/* The whole noinstr section. */
std::vector<std::string> noinstrCheck();

/* [@lo, @hi) taken as a noinstr section (for tests). */
std::vector<std::string> noinstrCheckRange(unsigned long lo, unsigned long hi);

/*
 * Is @tramp the trampoline of a DEFINE_STATIC_CALL_RO() call (recorded in
 * the kept section "static_call_ro", linux/static_call.h)? Any context.
 */
bool noinstrStaticCallRo(unsigned long tramp) noexcept;

/*
 * boot(): the check under pokelab.noinstr_check= (refuse: -EINVAL with the
 * first warning in @err; the default) | warn (each on stderr once) | off.
 * The text is checked once per process. Boot CPU, before SMP.
 */
int noinstrBootCheck(std::string &err);

} /* namespace kshim */
