// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static keys, x86 part: turning a site into a NOP or a JMP.
 *
 * Port of arch/x86/kernel/jump_label.c, v7.3. While the machine boots
 * (SYSTEM_BOOTING: CPU 0 alone, before the early hooks end) a site is
 * written with text_poke_early(); afterwards through the INT3 batch.
 */
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <asm/insn.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/busted.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/printk.h>

/* Port of struct jump_label_patch, arch/x86/kernel/jump_label.c, v7.3 */
struct jump_label_patch {
	const void *code;
	int size;
};

/* Port of arch_jump_entry_size(), arch/x86/kernel/jump_label.c, v7.3 */
int arch_jump_entry_size(struct jump_entry *entry)
{
	struct insn insn = {};

	insn_decode_kernel(&insn, (void *)jump_entry_code(entry));
	BUG_ON(insn.length != 2 && insn.length != 5);

	return insn.length;
}

/* Port of __jump_label_patch(), arch/x86/kernel/jump_label.c, v7.3 */
static struct jump_label_patch __jump_label_patch(struct jump_entry *entry,
						  enum jump_label_type type)
{
	const void *expect, *code, *nop;
	const void *addr, *dest;
	int size;

	addr = (void *)jump_entry_code(entry);
	dest = (void *)jump_entry_target(entry);

	size = arch_jump_entry_size(entry);
	switch (size) {
	case JMP8_INSN_SIZE:
		code = text_gen_insn(JMP8_INSN_OPCODE, addr, dest);
		nop = x86_nops[size];
		break;

	case JMP32_INSN_SIZE:
		code = text_gen_insn(JMP32_INSN_OPCODE, addr, dest);
		nop = x86_nops[size];
		break;

	default:
		BUG();
	}

	if (type == JUMP_LABEL_JMP)
		expect = nop;
	else
		expect = code;

	if (memcmp(addr, expect, size)) {
		/*
		 * The site is neither what we put there nor what the compiler
		 * did: something else wrote the text. Stop here.
		 */
		/* userspace: fmt's format; the address for %pS [%p], the bytes for %5ph */
		pr_crit("jump_label: Fatal kernel bug, unexpected op at {} ({:02x} != {:02x})) "
			"size:{} type:{}\n", addr,
			fmt::join((const u8 *)addr, (const u8 *)addr + 5, ""),
			fmt::join((const u8 *)expect, (const u8 *)expect + 5, ""), size, (int)type);
		BUG();
	}

	if (type == JUMP_LABEL_NOP)
		code = nop;

	return (struct jump_label_patch){.code = code, .size = size};
}

/*
 * Port of __jump_label_transform(), arch/x86/kernel/jump_label.c, v7.3: a
 * single site, written in place while only the boot CPU runs (or for
 * @init), else with the INT3 protocol.
 */
static __always_inline void __jump_label_transform(struct jump_entry *entry,
						   enum jump_label_type type,
						   int init)
{
	const struct jump_label_patch jlp = __jump_label_patch(entry, type);

	/*
	 * SYSTEM_BOOTING: no other CPU runs yet, and nothing can take an
	 * interrupt in the site's bytes, so a plain write (and sync_core())
	 * is safe; which of NOP and JMP was there does not matter.
	 */
	if (init || system_state == SYSTEM_BOOTING) {
		text_poke_early((void *)jump_entry_code(entry), jlp.code, jlp.size);
		return;
	}

	smp_text_poke_single((void *)jump_entry_code(entry), jlp.code, jlp.size, NULL);
}

/* Port of jump_label_transform(), arch/x86/kernel/jump_label.c, v7.3 */
static void jump_label_transform(struct jump_entry *entry,
				 enum jump_label_type type,
				 int init)
{
	mutex_lock(&text_mutex);
	__jump_label_transform(entry, type, init);
	mutex_unlock(&text_mutex);
}

/* Port of arch_jump_label_transform(), arch/x86/kernel/jump_label.c, v7.3 */
void arch_jump_label_transform(struct jump_entry *entry, enum jump_label_type type)
{
	jump_label_transform(entry, type, 0);
}

/*
 * Port of arch_jump_label_transform_queue(), arch/x86/kernel/jump_label.c,
 * v7.3: while booting, one site at a time (text_poke_early()), else into
 * the batch that arch_jump_label_transform_apply() finishes.
 */
bool arch_jump_label_transform_queue(struct jump_entry *entry, enum jump_label_type type)
{
	struct jump_label_patch jlp;

	if (system_state == SYSTEM_BOOTING) {
		/* no batch while booting */
		arch_jump_label_transform(entry, type);
		return true;
	}

	mutex_lock(&text_mutex);
	jlp = __jump_label_patch(entry, type);
	smp_text_poke_batch_add((void *)jump_entry_code(entry), jlp.code, jlp.size, NULL);
	if (!BUSTED(JL_TEXT_MUTEX_HELD))	/* userspace: BUSTED, the unlock lost */
		mutex_unlock(&text_mutex);
	return true;
}

/* Port of arch_jump_label_transform_apply(), arch/x86/kernel/jump_label.c, v7.3 */
void arch_jump_label_transform_apply(void)
{
	mutex_lock(&text_mutex);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
}
