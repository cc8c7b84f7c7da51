# SPDX-License-Identifier: GPL-2.0-only
#
# The kernel-tree patches port-patch is tested on, made at test time: each is
# an edit of a file of the Linux 7.3 reference tree (a few tokens to find
# and what to put there) turned into a patch by a diff, so no kernel text is
# kept here. Each says where port-patch must place it and, for --torture,
# what torture must say of it (docs/porting.md lists them).

import difflib
import os
import shutil


class Case:
	def __init__(self, name, edits, status, expect, verdict=None, why='', lines=None,
		     written=()):
		# edits: [(kernel file, what is there, what goes there)]; several files
		# or several patches (a list of lists) make a series; lines: the port
		# lines the written change must add and remove, (added, removed);
		# written: text the port's changed lines must hold
		self.name, self.edits, self.status = name, edits, status
		self.expect, self.verdict, self.why, self.lines = expect, verdict, why, lines
		self.written = written


ALT = 'arch/x86/kernel/alternative.c'
JL = 'kernel/jump_label.c'
SC = 'kernel/static_call_inline.c'
SMP = 'kernel/smp.c'
CT = 'kernel/context_tracking.c'
FIN = 'applied at alternative/alternative.cpp'

CASES = [
	Case('no-sync-3', [[(ALT, '\tif (do_sync)\n\t\tsmp_text_poke_sync_each_cpu();\n\n\t/*\n'
			     '\t * Remove and wait', '\t/*\n\t * Remove and wait')]],
	     0, [FIN, '(smp_text_poke_batch_finish())'], 'FAILURE',
	     'the sync after phase 3 deleted: an INT3 may still be fetched after the drain',
	     lines=(0, 2)),
	Case('no-sync-2', [[(ALT, '\t\t */\n\t\tsmp_text_poke_sync_each_cpu();\n\t}\n',
			     '\t\t */\n\t}\n')]],
	     0, [FIN, '(smp_text_poke_batch_finish())'], 'FAILURE',
	     'the sync after phase 2 deleted: tails and first bytes torn',
	     lines=(0, 1)),
	Case('refs-publish-plain', [[(ALT, 'atomic_set_release(per_cpu_ptr(&text_poke_array_refs, i), 1)',
				      'atomic_set(per_cpu_ptr(&text_poke_array_refs, i), 1)')]],
	     0, ['in its helper text_poke_array_refs_publish()'], None,
	     'a plain store where the release was: on x86 both are a MOV (TSO), no fault',
	     lines=(1, 1)),
	Case('refs-drain-relaxed', [[(ALT, 'atomic_cond_read_acquire(refs, !VAL);',
				      'atomic_cond_read_relaxed(refs, !VAL);')]],
	     0, ['in its helper text_poke_array_refs_drain()'], None,
	     'the drain\'s wait without acquire (placement)',
	     lines=(1, 1)),
	Case('call-as-jmp', [[(ALT, 'int3_emulate_call(regs, (long)ip, (long)ip + tpl->disp);',
			       'int3_emulate_jmp(regs, (long)ip + tpl->disp);')]],
	     0, [FIN, '(smp_text_poke_int3_handler())'], 'FAILURE',
	     'a CALL site emulated as a JMP: no return address',
	     lines=(1, 1)),
	Case('comment-only', [[(ALT, 'Having observed our INT3 instruction, we now must observe',
				'Having seen our INT3 instruction, we now must observe')]],
	     0, ['comment-only, nothing to do'], 'SUCCESS',
	     lines=(0, 0)),
	Case('not-in-port', [[(ALT, 'static void its_pages_protect(struct its_array *pages)\n{\n',
			       'static void its_pages_protect(struct its_array *pages)\n{\n'
			       '\tif (!pages->num)\n\t\treturn;\n')]],
	     0, ['not in the port: the kernel function its_pages_protect() has no port'], 'SUCCESS',
	     lines=(0, 0)),
	Case('lass-absorbed', [[(ALT, '\tlass_stac();\n\t__inline_memcpy(dst, src, len);',
				 '\tlass_stac();\n\tbarrier();\n\t__inline_memcpy(dst, src, len);')]],
	     0, ['the port does otherwise there', 'a marked deviation'], 'SUCCESS',
	     lines=(0, 0)),
	Case('jump-label-skip-last', [[(JL, '\tfor (; (entry < stop) && (jump_entry_key(entry) == key); '
					'entry++) {\n\n',
					'\tfor (; (entry + 1 < stop) && (jump_entry_key(entry) == key); '
					'entry++) {\n\n')]],
	     0, ['applied at alternative/jump_label.cpp', '(__jump_label_update())'], 'FAILURE',
	     'a key\'s last site never updated: the site disagrees with __jump_table',
	     lines=(1, 1)),
	Case('static-call-skip-init', [[(SC, '\t\t\tif (!init && static_call_is_init(site))\n'
					 '\t\t\t\tcontinue;\n',
					 '\t\t\tif (static_call_is_init(site))\n\t\t\t\tcontinue;\n')]],
	     0, ['applied at alternative/static_call_inline.cpp', '(__static_call_update())'],
	     None, 'init sites skipped at init too (placement)',
	     lines=(1, 1)),
	Case('static-call-skip-last', [[(SC, '\t\tfor (site = site_mod->sites;\n\t\t     site < stop && '
					 'static_call_key(site) == key; site++) {',
					 '\t\tfor (site = site_mod->sites;\n\t\t     site + 1 < stop && '
					 'static_call_key(site) == key; site++) {')]],
	     0, ['applied at alternative/static_call_inline.cpp', '(__static_call_update())'],
	     'FAILURE', 'the last site of a key never updated: it disagrees with .static_call_sites',
	     lines=(1, 1)),
	Case('ct-user-exit-no-enter', [[(CT, '\t\t\tct_kernel_enter(true, CT_RCU_WATCHING - state);\n', '')]],
	     0, ['applied at context_tracking/context_tracking.cpp', '(__ct_user_exit())'],
	     'FAILURE', 'user exit without ct_kernel_enter(): RCU never watches, the deferred '
	     'sync never runs',
	     lines=(0, 1)),
	Case('refs-skip-wait', [[(ALT, '\t\tif (unlikely(!atomic_dec_and_test(refs)))\n'
				  '\t\t\tatomic_cond_read_acquire(refs, !VAL);\n',
				  '\t\tatomic_dec(refs);\n')]],
	     0, ['in its helper text_poke_array_refs_drain()'], 'FAILURE',
	     'the drain does not wait for handlers still holding a ref', lines=(1, 3)),
	Case('jump-label-other-form', [[(JL, '\t\tif (jump_label_can_update(entry, init))\n'
					 '\t\t\tarch_jump_label_transform(entry, jump_label_type(entry));\n',
					 '\t\tif (!jump_label_can_update(entry, init))\n\t\t\tcontinue;\n'
					 '\t\tarch_jump_label_transform(entry, jump_label_type(entry));\n')]],
	     0, ['the port follows the other #ifdef form of __jump_label_update()'], None,
	     'the !HAVE_JUMP_LABEL_BATCH form, which x86 does not build', lines=(0, 0)),
	Case('smp-cond-inverted', [[(SMP, '\t\t\tif (cond_func && !cond_func(cpu, info)) {',
				     '\t\t\tif (cond_func && cond_func(cpu, info)) {')]],
	     0, ['applied at kernel_shim/kernel/smp.cpp', '(smp_call_function_many_cond())'], None,
	     'the cross-call condition inverted (placement, spacing kept)', lines=(1, 1)),
	Case('smp-wait-refactor', [[(SMP, '\tif (run_remote && wait) {\n\t\tfor_each_cpu(cpu, cpumask) {',
				     '\tif (wait && run_remote) {\n\t\tfor_each_cpu(cpu, cpumask) {')]],
	     0, ['applied at kernel_shim/kernel/smp.cpp', '(smp_call_function_many_cond())'],
	     'SUCCESS', 'a correct refactor: the same condition',
	     lines=(1, 1)),
	Case('series', [[(ALT, 'Having observed our INT3 instruction, we now must observe',
			  'Having seen our INT3 instruction, we now must observe')],
			[(JL, '\tfor (; (entry < stop) && (jump_entry_key(entry) == key); entry++) {\n\n',
			  '\tfor (; (entry < stop) && (key == jump_entry_key(entry)); entry++) {\n\n')],
			[(SMP, '\tif (run_remote && wait) {\n\t\tfor_each_cpu(cpu, cpumask) {',
			  '\tif (wait && run_remote) {\n\t\tfor_each_cpu(cpu, cpumask) {')]],
	     0, ['message 1', 'message 3', 'comment-only', 'applied at alternative/jump_label.cpp',
		 'applied at kernel_shim/kernel/smp.cpp'], 'SUCCESS',
	     'a three-patch series as an mbox, correct refactors',
	     lines=(2, 2)),
	Case('struct-member', [[(ALT, '\t/* see smp_text_poke_batch_finish() */\n\tu8 old;\n};',
				 '\t/* see smp_text_poke_batch_finish() */\n\tu8 old;\n\tu8 flags;\n};')]],
	     0, ['applied at alternative/text_poke_array.h', '(struct smp_text_poke_loc)'], None,
	     'a member added to a ported struct', lines=(1, 0)),
	Case('rename-local', [[('arch/x86/kernel/static_call.c', x, x.replace('emulate', 'emu'))
			       for x in ['\tconst void *emulate = NULL;',
					 '\t\t\temulate = code;\n\t\t\tcode = &xor5rax;',
					 '\t\t\temulate = code;\n\t\t\tcode = &warninsn;',
					 'smp_text_poke_single(insn, code, size, emulate);']]],
	     0, ['applied at alternative/static_call.cpp', 'the port does otherwise there'], None,
	     'a local renamed: the BUSTED ternary\'s line too, the lines the port omits absorbed',
	     lines=(3, 3)),
	Case('new-helper', [[(ALT, 'static void its_pages_protect(struct its_array *pages)\n',
			      'static int text_poke_nr_cpus(void)\n{\n\treturn num_possible_cpus();\n}\n\n'
			      'static void its_pages_protect(struct its_array *pages)\n')]],
	     0, ['applied at alternative/', '(text_poke_nr_cpus(), new, beside'], None,
	     'a new function goes beside its nearest ported neighbour', lines=(6, 0)),
	Case('move-absorbed', [[(JL, 'void static_key_enable_cpuslocked(struct static_key *key)\n{\n'
				 '\tSTATIC_KEY_CHECK_USE(key);\n\tlockdep_assert_cpus_held();\n',
				 'void static_key_enable_cpuslocked(struct static_key *key)\n{\n'
				 '\tlockdep_assert_cpus_held();\n\tSTATIC_KEY_CHECK_USE(key);\n')]],
	     0, ['the port does otherwise there'], 'SUCCESS',
	     'two statements swapped, one of them a line the port leaves out (marked): nothing '
	     'to do, the missing one never written', lines=(0, 0)),
	Case('helper-before-user', [[(JL, 'int jump_label_text_reserved(void *start, void *end)\n{\n'
				      '\tbool init = system_state < SYSTEM_RUNNING;\n',
				      'static bool jump_label_init_phase(void)\n{\n\treturn '
				      'system_state < SYSTEM_RUNNING;\n}\n\n'
				      'int jump_label_text_reserved(void *start, void *end)\n{\n'
				      '\tbool init = jump_label_init_phase();\n')]],
	     0, ['(jump_label_init_phase(), new, beside jump_label_text_reserved())'], 'SUCCESS',
	     'a new static helper goes before its one user in the port, as C++ needs',
	     lines=(7, 1)),
	Case('rename-in-marked-line', [[(ALT, old, old.replace('do_sync', 'nr_poked'))
					for old in ['\tint do_sync;\n', '\t\t\tdo_sync++;\n',
						    '\tif (do_sync) {\n', '\t\tdo_sync++;\n',
						    '\tif (do_sync)\n']] +
				       [(ALT, 'for (do_sync = 0, i = 0;', 'for (nr_poked = 0, i = 0;', 'all')]],
	     0, ['applied at alternative/alternative.cpp'], None,
	     'a local renamed inside the port\'s BUSTED conditions: their spacing kept',
	     written=('nr_poked && !BUSTED(NO_SYNC_2)', 'nr_poked && !BUSTED(NO_SYNC_3)')),
]


def make(case, up, work, out):
	"""Write case's patch (a diff, or an mbox of diffs) to out; return out."""
	series = case.edits if isinstance(case.edits[0], list) else [case.edits]
	if os.path.isdir(work):
		shutil.rmtree(work)
	texts = {}
	msgs = []
	for k, patch in enumerate(series):
		body = []
		for edit in patch:
			rel, old, new = edit[:3]	# a fourth, 'all': every place it matches
			if rel not in texts:
				with open(os.path.join(up, rel)) as f:
					texts[rel] = f.read()
			before = texts[rel]
			if before.count(old) != 1 and not (edit[3:] and before.count(old)):
				raise RuntimeError('%s: edit of %s matches %d places in %s' % (
					case.name, rel, before.count(old), up))
			after = before.replace(old, new)
			texts[rel] = after
			body.append(''.join(difflib.unified_diff(before.splitlines(True),
								 after.splitlines(True),
								 'a/' + rel, 'b/' + rel, n=3)))
		msgs.append(''.join(body))
	with open(out, 'w') as f:
		if len(msgs) == 1:
			f.write(msgs[0])
		else:
			for k, m in enumerate(msgs):
				f.write('From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
					'From: Test <test@example.org>\nSubject: [PATCH %d/%d] test: step %d\n\n'
					'Step %d.\n---\n%s-- \n2.39.2\n\n' % (k + 1, len(msgs), k + 1, k + 1, m))
	return out


def bad_inputs(up, work):
	"""(name, bytes, what the one line must name) of each kind of bad input."""
	good = make(CASES[0], up, work, os.path.join(os.path.dirname(work) or '.', 'good.patch'))
	with open(good, 'rb') as f:
		g = f.read()
	return [
		('not-a-patch', b'hello, this is not a patch\n', 'not a patch'),
		('binary', b'\x7fELF\x00\x00', 'binary'),
		('crlf', g.replace(b'\n', b'\r\n'), 'CRLF'),
		('other-arch', g.replace(b'arch/x86/', b'arch/arm64/'), "another architecture's file"),
		('rename-only', b'diff --git a/kernel/smp.c b/kernel/smp2.c\nsimilarity index 100%\n'
		 b'rename from kernel/smp.c\nrename to kernel/smp2.c\n', 'rename'),
		('cover-letter', b'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 '
		 b'2001\nSubject: [PATCH 0/2] a series\n\nWhat it does.\n', 'cover letter'),
		('not-7.3', g.replace(b'smp_text_poke_sync_each_cpu();', b'smp_text_poke_sync_all();'),
		 'does not apply'),
		# cut short in its last hunk: the one line names that hunk
		('truncated', g.rstrip(b'\n').rsplit(b'\n', 2)[0] + b'\n',
		 'in arch/x86/kernel/alternative.c hunk 1 (@@'),
	]
