// SPDX-License-Identifier: GPL-2.0-only
/*
 * Retpolines and the return thunk: the thunks (arch/x86/lib/retpoline.S's
 * role), the mitigation bits that choose what they become (bugs.c's role:
 * spectre_v2=, retbleed=), and the boot passes apply_retpolines() and
 * apply_returns() over the sites pokelab-objtool recorded
 * (retpoline_sites, return_sites; docs/static_calls.md, "Return thunks").
 *
 * The ports of patch_retpoline(), apply_retpolines(), emit_indirect(),
 * cpu_wants_rethunk(), cpu_wants_rethunk_at(), patch_return() and
 * apply_returns() follow arch/x86/kernel/alternative.c, v7.3, without ITS
 * thunks, call-depth tracking or FineIBT, and with the static-call fixups
 * (__static_call_fixup(), static_call_force_reinit()). The sites are those
 * of the objects the build compiles with -mindirect-branch=thunk-extern
 * -mfunction-return=thunk-extern and runs the pass over
 * (tests/alternative/thunk_sites.cpp, and modules built so, whose
 * module_finalize() runs the same passes); pokelab itself is not built
 * that way.
 *
 * userspace:
 *  - boot runs many times in one process: the sites' compiler bytes are
 *    saved at the first boot and put back before each later one applies
 *    the passes again, under that boot's spectre_v2= / retbleed= /
 *    clearcpuid=, as apply_alternatives.cpp does for its sites;
 *  - the mitigation bits: X86_FEATURE_RETPOLINE and _RETHUNK are on unless
 *    spectre_v2=off / retbleed=off or clearcpuid= takes them away
 *    (cpufeature.cpp), as for a CPU that needs both; there is no
 *    vulnerability detection to choose them.
 */
#include <cstring>
#include <string>
#include <vector>

#include <asm/alternative.h>
#include <asm/cpufeature.h>
#include <asm/insn.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/export.h>
#include <linux/static_call.h>
#include <pokelab/alt_text.h>

/*
 * The retpoline thunks, one per register in register-number order, each on
 * its own 32 bytes (RETPOLINE_THUNK_SIZE), so that a call's target gives
 * the register as (target - __x86_indirect_thunk_array) / 32; and the
 * return thunk. Speculation is caught in the PAUSE/LFENCE loop; the real
 * path returns to the target the thunk wrote over its own return address.
 */
#define POKELAB_THUNK(reg)						\
	".balign 32\n"							\
	".globl __x86_indirect_thunk_" #reg "\n"			\
	".type __x86_indirect_thunk_" #reg ", @function\n"		\
	"__x86_indirect_thunk_" #reg ":\n\t"				\
	"call 1f\n"							\
	"2:\tpause\n\t"							\
	"lfence\n\t"							\
	"jmp 2b\n"							\
	"1:\tmov %" #reg ", (%rsp)\n\t"					\
	"ret\n\t"							\
	"int3\n"							\
	".size __x86_indirect_thunk_" #reg ", . - __x86_indirect_thunk_" #reg "\n"

asm(".pushsection .text, \"ax\", @progbits\n"
    ".balign 32\n"
    ".globl __x86_indirect_thunk_array\n"
    "__x86_indirect_thunk_array:\n"
    POKELAB_THUNK(rax) POKELAB_THUNK(rcx) POKELAB_THUNK(rdx) POKELAB_THUNK(rbx)
    POKELAB_THUNK(rsp) POKELAB_THUNK(rbp) POKELAB_THUNK(rsi) POKELAB_THUNK(rdi)
    POKELAB_THUNK(r8) POKELAB_THUNK(r9) POKELAB_THUNK(r10) POKELAB_THUNK(r11)
    POKELAB_THUNK(r12) POKELAB_THUNK(r13) POKELAB_THUNK(r14) POKELAB_THUNK(r15)
    ".balign 32\n"
    ".globl __x86_return_thunk\n"
    ".type __x86_return_thunk, @function\n"
    "__x86_return_thunk:\n\t"
    "ret\n\t"
    "int3\n"
    ".size __x86_return_thunk, . - __x86_return_thunk\n"
    ".popsection\n");

/* arch/x86/include/asm/nospec-branch.h: the thunks as an array of RETPOLINE_THUNK_SIZE slots */
#define RETPOLINE_THUNK_SIZE	32
typedef u8 retpoline_thunk_t[RETPOLINE_THUNK_SIZE];
extern "C" retpoline_thunk_t __x86_indirect_thunk_array[];
extern "C" void __x86_return_thunk(void);

/* arch/x86/lib/retpoline.S: the thunks are exported, for modules built with them */
#define POKELAB_EXPORT_THUNK(reg)				\
	extern "C" void __x86_indirect_thunk_##reg(void);	\
	EXPORT_SYMBOL(__x86_indirect_thunk_##reg)
POKELAB_EXPORT_THUNK(rax);
POKELAB_EXPORT_THUNK(rcx);
POKELAB_EXPORT_THUNK(rdx);
POKELAB_EXPORT_THUNK(rbx);
POKELAB_EXPORT_THUNK(rsp);
POKELAB_EXPORT_THUNK(rbp);
POKELAB_EXPORT_THUNK(rsi);
POKELAB_EXPORT_THUNK(rdi);
POKELAB_EXPORT_THUNK(r8);
POKELAB_EXPORT_THUNK(r9);
POKELAB_EXPORT_THUNK(r10);
POKELAB_EXPORT_THUNK(r11);
POKELAB_EXPORT_THUNK(r12);
POKELAB_EXPORT_THUNK(r13);
POKELAB_EXPORT_THUNK(r14);
POKELAB_EXPORT_THUNK(r15);
EXPORT_SYMBOL(__x86_return_thunk);

/* arch/x86/kernel/cpu/bugs.c: the return thunk in use (srso's and others' go here) */
void (*x86_return_thunk)(void) = __x86_return_thunk;

/* The sites pokelab-objtool recorded: s32 offsets to each site, as objtool's tables. */
extern "C" s32 __start_retpoline_sites[] __attribute__((weak));
extern "C" s32 __stop_retpoline_sites[] __attribute__((weak));
extern "C" s32 __start_return_sites[] __attribute__((weak));
extern "C" s32 __stop_return_sites[] __attribute__((weak));

#define BYTES_NOP1		0x90

/*
 * arch/x86/include/asm/cfi.h's modes, and alternative.c's cfi_mode: pokelab
 * builds without CONFIG_CFI, so CFI_OFF (alternative.c's __CFI_DEFAULT then)
 * and never FineIBT.
 */
enum cfi_mode {
	CFI_AUTO,
	CFI_OFF,
	CFI_KCFI,
	CFI_FINEIBT,
};

static enum cfi_mode cfi_mode = CFI_OFF;

/*
 * Port of emit_indirect(), arch/x86/kernel/alternative.c, v7.3: CALL or JMP
 * *%reg at @bytes, filling @len bytes: a CALL gets CS prefixes before it
 * (up to three; a NOP after costs less than a longer prefix decode beyond
 * that), a JMP INT3s after it (straight-line speculation). Returns the
 * bytes written.
 */
static int emit_indirect(int op, int reg, u8 *bytes, int len)
{
	int cs = 0, bp = 0;
	int i = 0;
	u8 modrm;

	/* what is left of @len once the instruction is written */
	len -= 2 + (reg >= 8);
	WARN_ON_ONCE(len < 0);

	switch (op) {
	case CALL_INSN_OPCODE:
		modrm = 0x10;	/* Reg = 2; CALL r/m */
		if (len <= 3)
			cs = len;
		break;

	case JMP32_INSN_OPCODE:
		modrm = 0x20;	/* Reg = 4; JMP r/m */
		bp = len;
		break;

	default:
		WARN_ON_ONCE(1);
		return -1;
	}

	while (cs--)
		bytes[i++] = 0x2e;	/* CS prefix */

	if (reg >= 8) {
		bytes[i++] = 0x41;	/* REX.B prefix */
		reg -= 8;
	}

	modrm |= 0xc0;	/* Mod = 3 */
	modrm += reg;

	bytes[i++] = 0xff;	/* opcode */
	bytes[i++] = modrm;

	while (bp--)
		bytes[i++] = 0xcc;	/* INT3 */

	return i;
}

/* is_jcc32(): asm/insn.h */

/*
 * Port of patch_retpoline(), arch/x86/kernel/alternative.c, v7.3: a call,
 * jump or Jcc to __x86_indirect_thunk_REG becomes the indirect branch itself
 * (LFENCE first under RETPOLINE_LFENCE), or stays (-1) under plain
 * RETPOLINE.
 */
static int patch_retpoline(void *addr, struct insn *insn, u8 *bytes)
{
	retpoline_thunk_t *target;
	int reg, ret, i = 0;
	u8 op, cc;

	/* userspace: no void * arithmetic */
	target = (retpoline_thunk_t *)((u8 *)addr + insn->length + insn->immediate.value);
	reg = target - __x86_indirect_thunk_array;

	if (WARN_ON_ONCE(reg & ~0xf))
		return -1;

	/* CALL/JMP *%rsp: nobody does that */
	BUG_ON(reg == 4);

	if (cpu_feature_enabled(X86_FEATURE_RETPOLINE) &&
	    !cpu_feature_enabled(X86_FEATURE_RETPOLINE_LFENCE)) {
		/* userspace: no call-depth tracking (X86_FEATURE_CALL_DEPTH), no call thunks */

		return -1;
	}

	op = insn->opcode.bytes[0];

	/*
	 * Jcc.d32 to the thunk: the inverted Jcc.d8 over the indirect JMP,
	 *
	 *	Jncc.d8 1f; [ LFENCE ]; JMP *%reg; [ NOP ]; 1:
	 */
	if (is_jcc32(insn)) {
		cc = insn->opcode.bytes[1] & 0xf;
		cc ^= 1;	/* invert the condition */

		bytes[i++] = 0x70 + cc;		/* Jcc.d8 */
		bytes[i++] = insn->length - 2;	/* sizeof(Jcc.d8) == 2 */

		/* then as for JMP.d32 __x86_indirect_thunk_REG */
		op = JMP32_INSN_OPCODE;
	}

	/* RETPOLINE_LFENCE: an LFENCE before the indirect CALL/JMP */
	if (cpu_feature_enabled(X86_FEATURE_RETPOLINE_LFENCE)) {
		bytes[i++] = 0x0f;
		bytes[i++] = 0xae;
		bytes[i++] = 0xe8;	/* LFENCE */
	}

	/* userspace: no CONFIG_MITIGATION_ITS, so no ITS thunk for a lower-half branch */

	ret = emit_indirect(op, reg, bytes + i, insn->length - i);
	if (ret < 0)
		return ret;
	i += ret;

	for (; i < insn->length;)
		bytes[i++] = BYTES_NOP1;

	return i;
}

/* Port of apply_retpolines(), arch/x86/kernel/alternative.c, v7.3 */
__noinline void apply_retpolines(s32 *start, s32 *end)
{
	s32 *s;

	for (s = start; s < end; s++) {
		void *addr = (u8 *)s + *s;	/* userspace: no void * arithmetic */
		struct insn insn;
		int len, ret;
		u8 bytes[16];
		u8 op1, op2;
		u8 *dest;

		ret = insn_decode_kernel(&insn, addr);
		if (WARN_ON_ONCE(ret < 0))
			continue;

		op1 = insn.opcode.bytes[0];
		op2 = insn.opcode.bytes[1];

		switch (op1) {
		case 0x70 ... 0x7f:	/* Jcc.d8 */
			/* FineIBT's paranoid check: never pokelab's (cfi_mode is CFI_OFF) */
			WARN_ON_ONCE(cfi_mode != CFI_FINEIBT);
			continue;

		case CALL_INSN_OPCODE:
		case JMP32_INSN_OPCODE:
			/* cfi_paranoid with ITS: not pokelab's either */
			/* userspace: no void * arithmetic */
			dest = (u8 *)addr + insn.length + insn.immediate.value;
			if (dest[-1] == 0xd6 && (dest[0] & 0xf0) == 0x70) {
				WARN_ON_ONCE(cfi_mode != CFI_FINEIBT);
				continue;
			}
			break;

		case 0x0f:	/* escape */
			if (op2 >= 0x80 && op2 <= 0x8f)
				break;
			[[fallthrough]];
		default:
			WARN_ON_ONCE(1);
			continue;
		}

		/* userspace: no DPRINTK(RETPOLINE) */

		len = patch_retpoline(addr, &insn, bytes);
		if (len == insn.length) {
			optimize_nops((u8 *)addr, bytes, len);	/* userspace: C++ cast */
			/* userspace: no DUMP_BYTES(RETPOLINE) */

			text_poke_early(addr, bytes, len);
		}
	}
}

/* Port of cpu_wants_rethunk(), arch/x86/kernel/alternative.c, v7.3 */
bool cpu_wants_rethunk(void)
{
	return cpu_feature_enabled(X86_FEATURE_RETHUNK);
}

/*
 * Port of cpu_wants_rethunk_at(), arch/x86/kernel/alternative.c, v7.3:
 * should the return at @addr go through the return thunk?
 */
bool cpu_wants_rethunk_at(void *addr)
{
	if (!cpu_feature_enabled(X86_FEATURE_RETHUNK))
		return false;
	if (x86_return_thunk != its_return_thunk)
		return true;

	return !((unsigned long)addr & 0x20);
}

/*
 * Port of patch_return(), arch/x86/kernel/alternative.c, v7.3: a
 * "JMP __x86_return_thunk" goes to the return thunk in use while one is
 * wanted, else becomes "RET; INT3...".
 */
static int patch_return(void *addr, struct insn *insn, u8 *bytes)
{
	int i = 0;

	/* The thunk in use... */
	if (cpu_wants_rethunk_at(addr)) {
		i = JMP32_INSN_SIZE;
		__text_gen_insn(bytes, JMP32_INSN_OPCODE, addr, (void *)x86_return_thunk, i);	/* userspace: cast */
	} else {
		/* ... or none at all. */
		bytes[i++] = RET_INSN_OPCODE;
	}

	for (; i < insn->length;)
		bytes[i++] = INT3_INSN_OPCODE;
	return i;
}

/*
 * Port of apply_returns(), arch/x86/kernel/alternative.c, v7.3. A site
 * that is a static-call trampoline (a NULL call's "JMP __x86_return_thunk",
 * or one static_call() has rewritten since) is __static_call_fixup()'s;
 * with the return thunk wanted, static_call_init() runs again
 * (static_call_force_reinit()), so that the sites it wrote before the
 * feature was known are rewritten.
 */
__noinline void apply_returns(s32 *start, s32 *end)
{
	s32 *s;

	if (cpu_wants_rethunk())
		static_call_force_reinit();

	for (s = start; s < end; s++) {
		void *dest = NULL, *addr = (u8 *)s + *s;	/* userspace: no void * arithmetic */
		struct insn insn;
		int len, ret;
		u8 bytes[16];
		u8 op;

		ret = insn_decode_kernel(&insn, addr);
		if (WARN_ON_ONCE(ret < 0))
			continue;

		op = insn.opcode.bytes[0];
		if (op == JMP32_INSN_OPCODE)
			/* userspace: no void * arithmetic */
			dest = (u8 *)addr + insn.length + insn.immediate.value;

		/* userspace: WARN_ONCE() prints the condition, not the site's bytes */
		if (__static_call_fixup(addr, op, dest) ||
		    WARN_ON_ONCE(dest != (void *)&__x86_return_thunk))
			continue;

		/* userspace: no DPRINTK(RET) */

		len = patch_return(addr, &insn, bytes);
		if (len == insn.length) {
			/* userspace: no DUMP_BYTES(RET) */

			text_poke_early(addr, bytes, len);
		}
	}
}

namespace {

/* userspace: the sites' compiler bytes, saved at the first boot (see the file comment) */
struct SavedSite {
	u8 *addr;
	u8 bytes[6];
};
std::vector<SavedSite> *saved;

void saveOrRestore()
{
	if (!saved) {
		saved = new std::vector<SavedSite>;
		s32 *tables[2][2] = {{__start_retpoline_sites, __stop_retpoline_sites},
				     {__start_return_sites, __stop_return_sites}};

		for (auto &t : tables) {
			s32 *start = t[0], *end = t[1];

			for (s32 *s = start; s && s < end; s++) {
				SavedSite site{(u8 *)s + *s, {}};

				memcpy(site.bytes, site.addr, sizeof(site.bytes));
				saved->push_back(site);
			}
		}
		return;
	}
	for (const SavedSite &site : *saved)
		if (memcmp(site.addr, site.bytes, sizeof(site.bytes)))
			text_poke_early(site.addr, site.bytes, sizeof(site.bytes));
}

} /* namespace */

namespace pokelab {

void applyThunkSites()
{
	saveOrRestore();
	apply_retpolines(__start_retpoline_sites, __stop_retpoline_sites);
	apply_returns(__start_return_sites, __stop_return_sites);
}

} /* namespace pokelab */

namespace {

/* spectre_v2=: bugs.c's choice, of the forms pokelab knows */
int setSpectreV2(const char *val, std::string &err)
{
	std::string v = val ? val : "";

	if (v == "off") {
		setup_clear_cpu_cap(X86_FEATURE_RETPOLINE);
		setup_clear_cpu_cap(X86_FEATURE_RETPOLINE_LFENCE);
	} else if (v == "retpoline,lfence") {
		boot_cpu_data.x86_capability[X86_FEATURE_RETPOLINE_LFENCE >> 5] |=
			1u << (X86_FEATURE_RETPOLINE_LFENCE & 31);
	} else if (v != "retpoline" && v != "retpoline,generic") {
		err = "spectre_v2=" + v + ": expected spectre_v2=off, retpoline, retpoline,generic "
		      "or retpoline,lfence";
		return -EINVAL;
	}
	return 0;
}

int setRetbleed(const char *val, std::string &err)
{
	std::string v = val ? val : "";

	if (v == "off") {
		setup_clear_cpu_cap(X86_FEATURE_RETHUNK);
	} else if (v != "unret") {
		err = "retbleed=" + v + ": expected retbleed=off or unret";
		return -EINVAL;
	}
	return 0;
}

kshim::BootParamRegistrar spectreV2Param({
	"spectre_v2", setSpectreV2, [] {},
	"spectre_v2=off|retpoline|retpoline,generic|retpoline,lfence: what indirect-thunk "
	"sites become (default: retpoline, they stay calls of the thunk)",
});

kshim::BootParamRegistrar retbleedParam({
	"retbleed", setRetbleed, [] {},
	"retbleed=off|unret: whether return-thunk sites stay JMPs to the thunk (default: unret)",
});

} /* namespace */
