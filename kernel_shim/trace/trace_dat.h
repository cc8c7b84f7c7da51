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

/* The recorder's sink for a trace.dat file (v6). nullptr with one line in *@err. */
std::unique_ptr<TraceSink> makeDatSink(const std::string &path, const TraceFilter &f,
				       std::string *err);

} /* namespace kshim */
