// SPDX-License-Identifier: GPL-2.0-only
/*
 * The noinstr check, as objtool makes it (tools/objtool/check.c), on the
 * machine code of the running program: every instruction of the noinstr
 * section is decoded with Zydis; a call or a jump whose target leaves the
 * section, outside an instrumentation_begin()/instrumentation_end()
 * region, and every indirect call or jump there, is reported in objtool's
 * wording.
 *
 * As objtool, each function (from the executable's symbol table) is
 * walked from its entry along every path, fall-through and branch targets
 * inside it, with the instrumentation depth the markers set where a path
 * passes them: instrumentation_begin()/end() leave the address of a NOP in
 * __instr_begin/__instr_end (objtool's .discard.instr_begin/_end), so a
 * cold block GCC moved past the function's return still counts as inside
 * the region that branches to it. An instruction no path reaches is not
 * checked.
 */
#include <algorithm>
#include <map>
#include <utility>
#include <cerrno>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <Zydis/Zydis.h>

#include <asm/sections.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/noinstr_check.h>
#include <kernel_shim/symbols.h>

extern "C" const unsigned long __start___instr_begin[] __attribute__((weak));
extern "C" const unsigned long __stop___instr_begin[] __attribute__((weak));
extern "C" const unsigned long __start___instr_end[] __attribute__((weak));
extern "C" const unsigned long __stop___instr_end[] __attribute__((weak));
/* DEFINE_STATIC_CALL_RO()'s trampolines (linux/static_call.h) */
extern "C" const unsigned long __start_static_call_ro[] __attribute__((weak));
extern "C" const unsigned long __stop_static_call_ro[] __attribute__((weak));

namespace kshim {

namespace {

struct Marker {
	unsigned long addr;
	bool begin;
};

std::vector<Marker> markers(unsigned long lo, unsigned long hi)
{
	std::vector<Marker> m;

	for (const unsigned long *p = __start___instr_begin; p && p < __stop___instr_begin; p++)
		if (*p >= lo && *p < hi)
			m.push_back({*p, true});
	for (const unsigned long *p = __start___instr_end; p && p < __stop___instr_end; p++)
		if (*p >= lo && *p < hi)
			m.push_back({*p, false});
	/* at one address, an end closes before a begin opens */
	std::sort(m.begin(), m.end(), [](const Marker &a, const Marker &b) {
		return a.addr != b.addr ? a.addr < b.addr : !a.begin && b.begin;
	});
	return m;
}

} /* namespace */

bool noinstrStaticCallRo(unsigned long tramp) noexcept
{
	for (const unsigned long *p = __start_static_call_ro; p && p < __stop_static_call_ro; p++)
		if (*p == tramp)
			return true;
	return false;
}

namespace {

/*
 * A call or jump from @where to @t, outside the section and any region. As
 * objtool's noinstr_call_dest(): a static call's trampoline may be called
 * (its target is checked where it is defined), but only an _RO one.
 */
void checkCallOut(unsigned long t, const std::string &where, std::vector<std::string> &out)
{
	std::string sym = traceSymbol(t, false);
	const std::string prefix = "__SCT__";	/* STATIC_CALL_TRAMP_PREFIX */

	if (sym.compare(0, prefix.size(), prefix) == 0) {
		if (!noinstrStaticCallRo(t))
			out.push_back(fmt::format("{}: {}: non-RO static call usage in noinstr",
						  where, sym.substr(prefix.size())));
		return;
	}
	out.push_back(fmt::format("{}: call to {}() leaves .noinstr.text section", where, sym));
}

/*
 * One function, [@fs, @fe), walked as objtool walks it: from its entry
 * along every path (fall-through and branch targets inside it), each
 * instruction seen with the instrumentation depth of the first path that
 * reaches it; the markers change the depth where a path passes them.
 */
void checkFunction(unsigned long fs, unsigned long fe, const std::string &fn,
		   const std::vector<Marker> &m, unsigned long lo, unsigned long hi,
		   std::vector<std::string> &out)
{
	std::map<unsigned long, int> seen;
	std::vector<std::pair<unsigned long, int>> work = {{fs, 0}};

	while (!work.empty()) {
		auto [a, depth] = work.back();
		work.pop_back();

		while (a >= fs && a < fe && !seen.count(a)) {
			ZydisDecodedInstruction insn;
			ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

			seen[a] = depth;
			for (auto it = std::lower_bound(m.begin(), m.end(), a,
							[](const Marker &x, unsigned long v) {
								return x.addr < v;
							});
			     it != m.end() && it->addr == a; ++it)
				depth = std::max(0, depth + (it->begin ? 1 : -1));
			if (ZYAN_FAILED(ZydisDecoderDecodeFull(zydisDecoder(), (const void *)a, fe - a,
							       &insn, ops)))
				break;

			unsigned long next = a + insn.length;
			ZydisInstructionCategory cat = insn.meta.category;
			bool call = cat == ZYDIS_CATEGORY_CALL;
			bool jmp = cat == ZYDIS_CATEGORY_UNCOND_BR;
			bool jcc = cat == ZYDIS_CATEGORY_COND_BR;
			std::string where = fmt::format("{}+{:#x}", fn, a - fs);

			if (call || jmp || jcc) {
				const ZydisDecodedOperand &op = ops[0];

				if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) {
					unsigned long t = next + op.imm.value.s;

					/*
					 * A call to 0 is a C++ thread_local's guarded call of
					 * its undefined weak TLS init function: never taken.
					 */
					if (t && (t < lo || t >= hi) && !depth)
						checkCallOut(t, where, out);
					if ((jmp || jcc) && t >= fs && t < fe)
						work.push_back({t, depth});
				} else if (!depth) {
					out.push_back(fmt::format("{}: indirect {} found in .noinstr.text "
								  "section", where, call ? "call" : "jump"));
				}
				if (jmp)
					break;
			} else if (cat == ZYDIS_CATEGORY_RET || insn.mnemonic == ZYDIS_MNEMONIC_UD2 ||
				   insn.mnemonic == ZYDIS_MNEMONIC_INT3 ||
				   insn.mnemonic == ZYDIS_MNEMONIC_HLT) {
				break;
			}
			a = next;
		}
	}
}

} /* namespace */

std::vector<std::string> noinstrCheckRange(unsigned long lo, unsigned long hi)
{
	std::vector<std::string> out;
	std::vector<Marker> m = markers(lo, hi);
	std::vector<std::pair<unsigned long, std::string>> syms = traceSymbolTable();
	std::vector<std::pair<unsigned long, std::string>> fns;

	for (const auto &s : syms)
		if (s.first >= lo && s.first < hi && (fns.empty() || fns.back().first != s.first))
			fns.push_back(s);
	for (size_t i = 0; i < fns.size(); i++)
		checkFunction(fns[i].first, i + 1 < fns.size() ? fns[i + 1].first : hi,
			      fns[i].second, m, lo, hi, out);
	return out;
}

std::vector<std::string> noinstrCheck()
{
	if (!__noinstr_text_start)
		return {};
	return noinstrCheckRange((unsigned long)__noinstr_text_start,
				 (unsigned long)__noinstr_text_end);
}

/*
 * The boot check: pokelab.noinstr_check=refuse (as objtool fails the build;
 * the default but in sanitizer builds) | warn | off (docs/context_tracking.md).
 */
namespace {

enum class NoinstrMode { Refuse, Warn, Off };

/*
 * userspace: a sanitizer build cannot keep noinstr code in its section: the
 * compiler does not inline a helper into a function whose sanitize
 * attributes differ (the kernel marks every such helper __always_inline),
 * so per-CPU and TLS accessors become calls out. There the check is off by
 * default (docs/context_tracking.md).
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr NoinstrMode kDefaultMode = NoinstrMode::Off;
#else
constexpr NoinstrMode kDefaultMode = NoinstrMode::Refuse;
#endif
NoinstrMode noinstrMode = kDefaultMode;

int setNoinstrCheck(const char *val, std::string &err)
{
	std::string v = val ? val : "";

	if (v == "refuse" || v == "warn" || v == "off") {
		noinstrMode = v == "refuse" ? NoinstrMode::Refuse
			      : v == "warn" ? NoinstrMode::Warn
					    : NoinstrMode::Off;
		return 0;
	}
	err = fmt::format("pokelab.noinstr_check={}: expected pokelab.noinstr_check=refuse, warn "
			  "or off", v);
	return -EINVAL;
}

BootParamRegistrar noinstrParam({
	"pokelab.noinstr_check", setNoinstrCheck, [] { noinstrMode = kDefaultMode; },
	"pokelab.noinstr_check=refuse|warn|off: objtool's noinstr check of the machine code",
});

} /* namespace */

int noinstrBootCheck(std::string &err)
{
	static std::vector<std::string> found;
	static bool done;

	if (noinstrMode == NoinstrMode::Off)
		return 0;
	/* the text does not change between boots of one process: check it once */
	if (!done) {
		found = noinstrCheck();
		done = true;
	}
	if (found.empty())
		return 0;
	if (noinstrMode == NoinstrMode::Warn) {
		static bool warned;

		if (!warned)
			for (const std::string &w : found)
				fmt::print(stderr, "noinstr: warning: {}\n", w);
		warned = true;
		return 0;
	}
	err = fmt::format("noinstr: {} ({} warning{}; boot with pokelab.noinstr_check=warn to "
			  "see them all)", found.front(), found.size(), found.size() == 1 ? "" : "s");
	return -EINVAL;
}


} /* namespace kshim */
