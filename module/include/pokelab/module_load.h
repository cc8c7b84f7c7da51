/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab's module loader: a relocatable ELF object (.o, as a .ko is) laid
 * out into execmem pages, core and init apart, its symbols resolved against
 * the EXPORT_SYMBOL()s of the program and of the modules already loaded
 * (using a module's export makes the loading one depend on it: the other
 * cannot be unloaded first), relocated with x86-64's rules, its
 * alternatives applied, and announced to the module notifiers (jump labels,
 * static calls) before its init runs; its init memory (".init*" sections,
 * linux/init.h) is freed a grace period after the init returned.
 *
 * PORT: written fresh after kernel/module/main.c (load_module() and its
 * steps, delete_module(), free_module()), kernel/module/kallsyms.c
 * (find_kallsyms_symbol_value()) and arch/x86/kernel/module.c
 * (apply_relocate_add(), module_finalize()), v7.3, for the sections and
 * relocations pokelab's modules have (docs/modules.md).
 *
 * A module is built -fno-pic -fno-pie -mcmodel=small -mno-red-zone
 * -fno-asynchronous-unwind-tables -fno-exceptions -fno-rtti
 * -fno-stack-protector -fno-common (tests/modules/meson.build): relocations
 * R_X86_64_64, _32, _32S, _PC32, _PLT32 and _PC64 only, no GOT, PLT or TLS
 * ones, which the loader refuses as the kernel does ("Unknown rela
 * relocation"). The execmem pages lie within 2 GiB of pokelab's text
 * (and below 2 GiB, since pokelab is not position independent), so every
 * 32-bit form reaches. A module must not use this_cpu_*() or
 * preempt_disable(): they are TLS accesses (linux/percpu.h), for which the
 * kernel's %gs has no relocation.
 *
 * Task context on CPU 0 of a booted machine (patching and the notifiers
 * take text_mutex and jump_label_mutex); not async-signal-safe.
 */
#pragma once

#include <string>

#include <linux/module.h>

/*
 * finit_module(2)'s work: load the object at @path, run its init_module()
 * and return the live module in *@modp. 0, or -errno with one line in *@err
 * naming what was wrong (-ENOEXEC: not a relocatable x86-64 object, an
 * unknown relocation or one out of range, an export another module or the
 * program already has; -ENOENT: an unknown symbol ("Unknown symbol NAME
 * (err -2)"), the module that exports it not loaded; -EEXIST: a module of
 * that name is loaded; -ENOMEM: no memory; or the init's own error). The
 * init memory is freed later by CPU 0's kworker (do_free_init()), when CPU
 * 0 next sleeps; flush_module_init_free_work() waits for it.
 */
int load_module_file(const std::string &path, struct module **modp, std::string *err);

/* Wait until the init memory of every module that went live so far is freed. Sleeps. */
void flush_module_init_free_work(void);

/*
 * delete_module(2): unload the module called @name. -ENOENT: no such
 * module; -EWOULDBLOCK: a module uses it (one loaded after it that uses
 * its exports: unload that first) or a reference is held (try_module_get(),
 * symbol_get()); -EBUSY: it is still in its init or
 * going, or has an init and no exit. Else 0: nobody can get a reference
 * any more, its exit runs, the notifiers unlink its sites, it leaves the
 * list, synchronize_rcu() waits out any reader, and its memory is freed.
 * @flags: O_NONBLOCK (nothing else is accepted; no forced unload).
 */
int delete_module(const char *name, unsigned int flags);
/* pokelab: delete_module(@mod->name, O_NONBLOCK); @mod must be loaded. */
int delete_module(struct module *mod);

/*
 * kernel/module/kallsyms.c: the address of @mod's symbol @name, or 0; once
 * the module is live, 0 for its init symbols (their memory is going).
 */
unsigned long find_kallsyms_symbol_value(struct module *mod, const char *name);

/*
 * pokelab's instrumentation: a module tells its loader what it did
 * (pokelab_module_report(), exported; a tracepoint-like hook), and tools and
 * tests read the last value of each event. -1 when none was reported.
 * Any thread; lock-free.
 */
extern "C" void pokelab_module_report(const char *mod, int event, long val);
long pokelab_module_reported(const char *mod, int event);

/* arch/x86/kernel/module.c */
int apply_relocate_add(Elf64_Shdr *sechdrs, const char *strtab, unsigned int symindex,
		       unsigned int relsec, struct module *me);
int module_finalize(const Elf_Ehdr *hdr, const Elf_Shdr *sechdrs, struct module *me);
