// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static keys, x86 part: turning a site into a NOP or a JMP.
 *
 * Port of arch/x86/kernel/jump_label.c, v6.16.
 * userspace: there is no SYSTEM_BOOTING window in which sites are patched
 * one by one with text_poke_early(): pokelab's keys change only once the
 * machine runs, so every update goes through the INT3 batch.
 */
#include <cstring>

#include <fmt/format.h>

#include <asm/insn.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/printk.h>

struct jump_label_patch {
	const void *code;
	int size;
};

/* Port of arch_jump_entry_size(), arch/x86/kernel/jump_label.c */
int arch_jump_entry_size(struct jump_entry *entry)
{
	struct insn insn = {};

	insn_decode_kernel(&insn, (void *)jump_entry_code(entry));
	BUG_ON(insn.length != 2 && insn.length != 5);

	return insn.length;
}

/* Port of __jump_label_patch(), arch/x86/kernel/jump_label.c */
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
		/* The site is neither what we put there nor what the compiler did. */
		const unsigned char *a = (const unsigned char *)addr;
		const unsigned char *e = (const unsigned char *)expect;

		pr_crit("jump_label: Fatal kernel bug, unexpected op at {} ({:02x} {:02x} {:02x} "
			"{:02x} {:02x} != {:02x} {:02x} {:02x} {:02x} {:02x}) size:{} type:{}\n",
			addr, a[0], a[1], a[2], a[3], a[4], e[0], e[1], e[2], e[3], e[4], size,
			(int)type);
		BUG();
	}

	if (type == JUMP_LABEL_NOP)
		code = nop;

	return (struct jump_label_patch){.code = code, .size = size};
}

/* Port of arch_jump_label_transform(), arch/x86/kernel/jump_label.c */
void arch_jump_label_transform(struct jump_entry *entry, enum jump_label_type type)
{
	struct jump_label_patch jlp;

	mutex_lock(&text_mutex);
	jlp = __jump_label_patch(entry, type);
	smp_text_poke_single((void *)jump_entry_code(entry), jlp.code, jlp.size, NULL);
	mutex_unlock(&text_mutex);
}

/* Port of arch_jump_label_transform_queue(), arch/x86/kernel/jump_label.c */
bool arch_jump_label_transform_queue(struct jump_entry *entry, enum jump_label_type type)
{
	struct jump_label_patch jlp;

	mutex_lock(&text_mutex);
	jlp = __jump_label_patch(entry, type);
	smp_text_poke_batch_add((void *)jump_entry_code(entry), jlp.code, jlp.size, NULL);
	mutex_unlock(&text_mutex);
	return true;
}

/* Port of arch_jump_label_transform_apply(), arch/x86/kernel/jump_label.c */
void arch_jump_label_transform_apply(void)
{
	mutex_lock(&text_mutex);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
}
