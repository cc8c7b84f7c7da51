/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * trace-cmd's trace.dat writer (trace_dat.cpp), and the pieces of an
 * event's printed text that it and the text output share. Internal to
 * kernel_shim. Task context.
 */
#pragma once

#include <memory>
#include <string>

#include <kernel_shim/trace_output.h>

namespace kshim {

/* text_poke_batch's phase as its __print_symbolic() names it. */
std::string traceBatchPhaseName(int phase);

/* ct_work_flush's work as its __print_flags() names it. */
std::string traceCtWorkName(int work);

/* The recorder's sink for a trace.dat file (v6). nullptr with one line in *@err. */
std::unique_ptr<TraceSink> makeDatSink(const std::string &path, const TraceFilter &f,
				       std::string *err);

} /* namespace kshim */
