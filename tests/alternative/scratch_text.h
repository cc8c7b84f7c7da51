/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Patchable scratch text for the batch-rule, emulation and bug-replay tests.
 *
 * pl_slots: PL_NR_SLOTS functions of 32 bytes in .text, each
 *	+0	mov %rsp, pl_entry_sp(%rip)	(the caller's SP after its CALL)
 *	+7	mov %edi, %eax
 *	+9	the site: NOP5 at rest
 *	+14	add $1, %eax
 *	+17	ret, then INT3 up to +32
 * so slot(x) returns x + 1 at rest; with the site a CALL to pl_add100 it
 * returns x + 101, a JMP32 to pl_ret_neg -1, RET + INT3 padding x.
 *
 * pl_jcc_slot: mov %edi,%eax; test %eax,%eax; a 6-byte site (NOP6 at rest)
 * at +4; add $1,%eax; ret. With the site "jz pl_ret_neg" (Jcc.d32) it
 * returns -1 for 0 and x + 1 otherwise.
 */
#pragma once

#include <cstdint>

#define PL_NR_SLOTS	300
#define PL_SLOT_SIZE	32
#define PL_SITE_OFF	9
#define PL_JCC_SITE_OFF	4

extern "C" {
extern char pl_slots[];
extern char pl_jcc_slot[];
extern char pl_add100[];
extern char pl_ret_neg[];
extern uintptr_t pl_entry_sp;
extern uintptr_t pl_callee_sp;
}

namespace pltest {

typedef int (*SlotFn)(int);

inline char *slot(int i)
{
	return pl_slots + PL_SLOT_SIZE * i;
}

inline char *site(int i)
{
	return slot(i) + PL_SITE_OFF;
}

inline int call_slot(int i, int x)
{
	return ((SlotFn)(void *)slot(i))(x);
}

inline char *jcc_site()
{
	return pl_jcc_slot + PL_JCC_SITE_OFF;
}

inline int call_jcc_slot(int x)
{
	return ((SlotFn)(void *)pl_jcc_slot)(x);
}

extern const unsigned char nop5[5];
extern const unsigned char nop6[6];

/* Bytes of a CALL/JMP32 at @at reaching @dest. */
void gen_rel32(unsigned char *buf, unsigned char opcode, const void *at, const void *dest);

/* Put every slot and the Jcc slot back to rest (batch, under text_mutex). */
void reset_slots();

} /* namespace pltest */

#include <pokelab/bug_switches.h>

#include "booted.h"

namespace pltest {

/*
 * A booted machine whose scratch slots start and end as NOP5 slots, with
 * every bug switch off: the base of the tests that patch them.
 */
class ScratchBooted : public pokelab::test::Booted
{
protected:
	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		pokelabBugsReset();
		reset_slots();
	}

	void TearDown() override
	{
		pokelabBugsReset();
		reset_slots();
		pokelab::test::Booted::TearDown();
	}
};

} /* namespace pltest */
