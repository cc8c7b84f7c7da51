/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The loader's own steps, shared by module/main.cpp (loading) and
 * module/unload.cpp (references between modules, unloading). Private to
 * module/. Task context on a CPU; module_mutex as each says.
 */
#pragma once

#include <linux/module.h>

/* Set the base reference and one for the init; empty use lists. */
int module_unload_init(struct module *mod);
/* @a uses @b: take a reference on @b and record the use. module_mutex held. */
int ref_module(struct module *a, struct module *b);
/* Drop the references and uses of what @mod used. Takes module_mutex. */
void module_unload_free(struct module *mod);
/* UNFORMED, its uses dropped, off the list, a grace period, its memory freed. */
void free_module(struct module *mod);
/* Free each memory type of @mod, MOD_DATA last, then struct module. */
void free_mod_mem(struct module *mod);
/* Free one memory type of @mod (execmem_free()). */
void module_memory_free(struct module *mod, enum mod_mem_type type);
/* userspace: struct module and the loader's copy of the object (allocated apart). */
void free_module_struct(struct module *mod);
