// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab-objtool: the part of objtool's job pokelab needs, run by the
 * build over a relocatable object (docs/static_calls.md).
 *
 *	pokelab-objtool static-call-sites IN.o OUT.cpp
 *	pokelab-objtool thunk-sites IN.o OUT.cpp
 *
 * finds every call and tail call of a static-call trampoline in IN.o: a
 * PC32/PLT32 relocation against __SCT__<name> whose 4 bytes are the
 * operand of an E8 (CALL) or E9 (JMP, a tail call) that begins an
 * instruction of the function around it (decoded with Zydis from the
 * function's first byte, as objtool decodes it), and writes OUT.cpp: one
 * static_call_sites entry per site (struct static_call_site: the site and
 * its key __SCK__<name>, self-relative, STATIC_CALL_SITE_TAIL in the key for
 * a tail call), in a top-level asm block to compile and link beside IN.o.
 * The same table objtool's static_call_sites pass writes into the object's
 * .static_call_sites (tools/objtool/check.c: create_static_call_sections()).
 *
 * The entries name each site as its function's symbol plus an offset, so a
 * site must be in a function with a global symbol (extern "C", or any
 * non-static C++ function); a site in a local one is an error, as is one
 * that does not begin an instruction. thunk-sites does the same for
 * objtool's .retpoline_sites and .return_sites (thunkSites() below).
 * Exit 0, or 1 with one line naming
 * the object, the function and the offset; 2 for bad arguments.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <Zydis/Zydis.h>

namespace {

struct Obj {
	std::vector<unsigned char> img;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *shstr;
	const Elf64_Sym *sym = nullptr;
	size_t nsym = 0;
	const char *str = nullptr;
};

int fail(const std::string &msg)
{
	fprintf(stderr, "pokelab-objtool: %s\n", msg.c_str());
	return 1;
}

bool load(const char *path, Obj *o, std::string *err)
{
	std::ifstream in(path, std::ios::binary);

	if (!in) {
		*err = std::string(path) + ": " + strerror(errno);
		return false;
	}
	o->img.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	o->eh = (const Elf64_Ehdr *)o->img.data();
	if (o->img.size() < sizeof(Elf64_Ehdr) || memcmp(o->eh->e_ident, ELFMAG, SELFMAG) ||
	    o->eh->e_type != ET_REL || o->eh->e_machine != EM_X86_64 ||
	    o->eh->e_shoff + (size_t)o->eh->e_shnum * sizeof(Elf64_Shdr) > o->img.size()) {
		*err = std::string(path) + ": not a relocatable x86-64 ELF object";
		return false;
	}
	o->sh = (const Elf64_Shdr *)(o->img.data() + o->eh->e_shoff);
	o->shstr = (const char *)o->img.data() + o->sh[o->eh->e_shstrndx].sh_offset;
	for (unsigned int i = 0; i < o->eh->e_shnum; i++) {
		if (o->sh[i].sh_type != SHT_SYMTAB)
			continue;
		o->sym = (const Elf64_Sym *)(o->img.data() + o->sh[i].sh_offset);
		o->nsym = o->sh[i].sh_size / sizeof(Elf64_Sym);
		o->str = (const char *)o->img.data() + o->sh[o->sh[i].sh_link].sh_offset;
	}
	if (!o->sym) {
		*err = std::string(path) + ": no symbol table";
		return false;
	}
	return true;
}

/* The function symbol of section @sec that holds @off, or nullptr. */
const Elf64_Sym *functionAt(const Obj &o, unsigned int sec, unsigned long off)
{
	for (size_t i = 1; i < o.nsym; i++) {
		const Elf64_Sym &s = o.sym[i];

		if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx == sec &&
		    off >= s.st_value && off < s.st_value + s.st_size)
			return &s;
	}
	return nullptr;
}

/* Does an instruction of @fn begin at @at, a CALL, JMP or Jcc with a rel32 (@len bytes)? */
bool beginsBranch(const Obj &o, unsigned int sec, const Elf64_Sym &fn, unsigned long at,
		  unsigned int len)
{
	static ZydisDecoder dec;
	static bool init;
	const unsigned char *text = o.img.data() + o.sh[sec].sh_offset;
	unsigned long off = fn.st_value;

	if (!init) {
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		init = true;
	}
	while (off < at) {
		ZydisDecodedInstruction insn;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, text + off,
								fn.st_value + fn.st_size - off,
								&insn)))
			return false;
		off += insn.length;
	}
	if (off != at)
		return false;

	ZydisDecodedInstruction insn;

	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, nullptr, text + at, len, &insn)) &&
	       insn.length == len &&
	       (insn.mnemonic == ZYDIS_MNEMONIC_CALL || insn.mnemonic == ZYDIS_MNEMONIC_JMP ||
		insn.meta.category == ZYDIS_CATEGORY_COND_BR);
}

int writeOut(const char *out, const std::string &text);

/*
 * Each PC32/PLT32 relocation in a section of code: @fn(text section, its
 * bytes, the relocation, the target symbol's name); a non-zero return
 * stops the walk and is returned.
 */
template<typename F>
int forEachCodeReloc(const Obj &o, F fn)
{
	for (unsigned int r = 1; r < o.eh->e_shnum; r++) {
		const Elf64_Shdr &rs = o.sh[r];
		unsigned int sec = rs.sh_info;

		if (rs.sh_type != SHT_RELA || sec >= o.eh->e_shnum ||
		    !(o.sh[sec].sh_flags & SHF_EXECINSTR))
			continue;
		const Elf64_Rela *rel = (const Elf64_Rela *)(o.img.data() + rs.sh_offset);

		for (size_t i = 0; i < rs.sh_size / sizeof(Elf64_Rela); i++) {
			unsigned int type = ELF64_R_TYPE(rel[i].r_info);
			int ret;

			if (type != R_X86_64_PLT32 && type != R_X86_64_PC32)
				continue;
			ret = fn(sec, o.img.data() + o.sh[sec].sh_offset, rel[i],
				 o.str + o.sym[ELF64_R_SYM(rel[i].r_info)].st_name);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int staticCallSites(const char *in, const char *out)
{
	Obj o;
	std::string err, body;
	unsigned int n = 0;

	if (!load(in, &o, &err))
		return fail(err);
	int ret = forEachCodeReloc(o, [&](unsigned int sec, const unsigned char *b,
					  const Elf64_Rela &rel, const char *name) -> int {
		unsigned long at = rel.r_offset - 1;

		if (strncmp(name, "__SCT__", 7) || rel.r_offset < 1)
			return 0;
		unsigned char op = b[at];

		if (op != 0xe8 && op != 0xe9)
			return 0;	/* the trampoline's address, taken: not a call */
		const Elf64_Sym *fn = functionAt(o, sec, at);
		char where[128];

		snprintf(where, sizeof(where), "%s+%#lx", o.shstr + o.sh[sec].sh_name, at);
		if (!fn)
			return fail(std::string(in) + ": call of " + name + " at " + where +
				    " is in no function");
		std::string fname = o.str + fn->st_name;

		if (ELF64_ST_BIND(fn->st_info) == STB_LOCAL)
			return fail(std::string(in) + ": call of " + name + " in local function " +
				    fname + ": give it a global symbol");
		if (!beginsBranch(o, sec, *fn, at, 5))
			return fail(std::string(in) + ": call of " + name + " at " + where + " (" +
				    fname + ") does not begin an instruction");
		char line[512];

		snprintf(line, sizeof(line),
			 "    \".long %s + %#lx - .\\n\"\n"
			 "    \".long __SCK__%s + %d - .\\n\"\n",
			 fname.c_str(), at - fn->st_value, name + 7, op == 0xe9 ? 1 : 0);
		body += line;
		n++;
		return 0;
	});

	if (ret)
		return ret;
	std::string text = std::string("// SPDX-License-Identifier: GPL-2.0-only\n"
					"// Generated by pokelab-objtool static-call-sites from ") +
			   in + ": " + std::to_string(n) + " site(s).\n";

	if (n)
		text += "asm(\".pushsection static_call_sites, \\\"aw\\\"\\n\"\n"
			"    \".balign 4\\n\"\n" + body + "    \".popsection\\n\");\n";
	return writeOut(out, text);
}

/* Write @text to @out through a fresh file and a rename: never half-written. */
int writeOut(const char *out, const std::string &text)
{
	std::string tmp = std::string(out) + ".tmp";
	FILE *f = fopen(tmp.c_str(), "w");

	if (!f || fputs(text.c_str(), f) < 0 || fclose(f)) {
		remove(tmp.c_str());
		return fail(std::string(out) + ": " + strerror(errno));
	}
	if (rename(tmp.c_str(), out))
		return fail(std::string(out) + ": " + strerror(errno));
	return 0;
}

/*
 * thunk-sites: objtool's .retpoline_sites and .return_sites for an object
 * built with -mindirect-branch=thunk-extern -mfunction-return=thunk-extern:
 * each CALL, JMP or Jcc.d32 of __x86_indirect_thunk_REG, and each JMP of
 * __x86_return_thunk, as an s32 offset to the instruction.
 */
int thunkSites(const char *in, const char *out)
{
	Obj o;
	std::string err, ret, rp;
	unsigned int nret = 0, nrp = 0;

	if (!load(in, &o, &err))
		return fail(err);
	int res = forEachCodeReloc(o, [&](unsigned int sec, const unsigned char *b,
					  const Elf64_Rela &rel, const char *name) -> int {
		bool isRet = !strcmp(name, "__x86_return_thunk");
		bool isRp = !strncmp(name, "__x86_indirect_thunk_", 21);

		if ((!isRet && !isRp) || rel.r_offset < 1)
			return 0;
		unsigned long off = rel.r_offset;
		/*
		 * E8/E9 rel32, or 0F 8x rel32 (Jcc.d32); a JMP may start its
		 * section (a static-call trampoline's "JMP __x86_return_thunk")
		 */
		bool jcc = off >= 2 && b[off - 2] == 0x0f && (b[off - 1] & 0xf0) == 0x80;
		unsigned long at = jcc ? off - 2 : off - 1;
		unsigned int len = jcc ? 6 : 5;

		if (!jcc && b[at] != 0xe8 && b[at] != 0xe9)
			return 0;
		if (isRet && (jcc || b[at] != 0xe9))
			return 0;	/* only JMP __x86_return_thunk is a return */
		const Elf64_Sym *fn = functionAt(o, sec, at);

		if (!fn || ELF64_ST_BIND(fn->st_info) == STB_LOCAL)
			return fail(std::string(in) + ": " + name + " site in " +
				    (fn ? std::string("local function ") + (o.str + fn->st_name)
					: std::string("no function")) +
				    ": give it a global symbol");
		if (!beginsBranch(o, sec, *fn, at, len))
			return fail(std::string(in) + ": " + name + " site in " +
				    (o.str + fn->st_name) + " does not begin an instruction");
		char line[256];

		snprintf(line, sizeof(line), "    \".long %s + %#lx - .\\n\"\n",
			 o.str + fn->st_name, at - fn->st_value);
		(isRet ? ret : rp) += line;
		(isRet ? nret : nrp)++;
		return 0;
	});

	if (res)
		return res;
	std::string text = std::string("// SPDX-License-Identifier: GPL-2.0-only\n"
					"// Generated by pokelab-objtool thunk-sites from ") +
			   in + ": " + std::to_string(nrp) + " retpoline site(s), " +
			   std::to_string(nret) + " return site(s).\n";

	if (nrp)
		text += "asm(\".pushsection retpoline_sites, \\\"a\\\"\\n\"\n"
			"    \".balign 4\\n\"\n" + rp + "    \".popsection\\n\");\n";
	if (nret)
		text += "asm(\".pushsection return_sites, \\\"a\\\"\\n\"\n"
			"    \".balign 4\\n\"\n" + ret + "    \".popsection\\n\");\n";
	return writeOut(out, text);
}

} /* namespace */

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "static-call-sites"))
		return staticCallSites(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "thunk-sites"))
		return thunkSites(argv[2], argv[3]);
	fprintf(stderr, "pokelab-objtool: expected: pokelab-objtool static-call-sites|thunk-sites "
			"IN.o OUT.cpp\n");
	return 2;
}
