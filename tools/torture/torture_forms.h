/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Instruction forms for torture (torture_forms.cpp): the 32 Jcc sites
 * (every condition, rel8 and rel32, each flipped between two conditions
 * that are not complements) that torture_emu_sites' batch writes, and
 * torture_big_key's 2-byte jump-label sites (NOP2 <-> JMP8).
 */
#pragma once

#include <string>

#include <linux/types.h>

namespace pokelab::torture {

constexpr unsigned int kNrJccSites = 32;
constexpr unsigned int kNrJl2Sites = 8;

/* Every Jcc site holds its condition for @state (0: the boot one). */
bool jccSitesIn(unsigned int state);
/* Queue every Jcc site's instruction for @state in the open batch. text_mutex held. */
void jccBatchAdd(unsigned int state);
/* Run every Jcc site (or one, drawn from @arg) with flags drawn from @arg; a checksum. */
unsigned long runJccSites(unsigned long arg);
unsigned long runSomeJccSites(unsigned long arg);
/* At the end: "" if every site holds and computes its condition for @state, else the first miss. */
std::string jccCheck(unsigned int state);

/* Run the 2-byte jump-label sites; a checksum. */
unsigned long runJl2Sites(void);
/* Each 2-byte site jumps as torture_big_key @on demands. */
bool jl2Computes(bool on);

} /* namespace pokelab::torture */
