// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sinks that feed a timeline picture (timeline.h): the window of a
 * session's last events, the picture written when the session finishes,
 * the mask; and the book that writes a run's sections as one SVG.
 */
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/plural.h>
#include <kernel_shim/trace_output.h>
#include <linux/bug.h>

#include "stop.h"
#include "timeline/timeline.h"
#include "timeline/timeline_draw.h"

namespace pokelab {

namespace {

using kshim::TraceEvent;
using kshim::TraceType;
using timeline_svg::dur;

/* The events of the last @window ns (0: all), and what the session dropped. */
class WindowSink : public kshim::TraceSink
{
public:
	explicit WindowSink(u64 windowNs) : window_(windowNs) {}

	void begin(const std::vector<kshim::TraceCpu> &cpus) override { nr_ = cpus.size(); }

	void event(const TraceEvent &e) override
	{
		ev_.push_back(e);
		while (window_ && ev_.front().ts + window_ < e.ts) {
			ev_.pop_front();
			cut_ = true;
		}
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *) override
	{
		dropped_ = 0;
		for (const kshim::TraceCpu &c : cpus)
			dropped_ += c.dropped;
		nr_ = std::max<size_t>(nr_, cpus.size());
		return true;
	}

	void mark(const TimelineMark &m) { marks_.push_back(m); }

	/* The picture of what was kept, @title over @subtitle and the window's notes. */
	TimelineSection section(const std::string &title, const std::string &subtitle) const
	{
		TimelineSection s{std::vector<TraceEvent>(ev_.begin(), ev_.end()), (unsigned int)nr_,
				  title, subtitle, marks_};

		/* a run stopped by a signal ends early: the picture says where it was cut */
		if (stopSignal())
			s.note += fmt::format("{}interrupted ({}): the run was cut where the "
					      "picture ends", s.note.empty() ? "" : "; ",
					      stopSignalName());
		if (cut_)
			s.note += fmt::format("{}the last {} of the run (--timeline-window)",
					      s.note.empty() ? "" : "; ", dur((double)window_));
		if (dropped_)
			s.note += fmt::format("{}{} events dropped (x marks)",
					      s.note.empty() ? "" : "; ", dropped_);
		if (!marks_.empty())
			s.note += fmt::format("{}{} (red rings)", s.note.empty() ? "" : "; ",
					      kshim::nOf(marks_.size(), "model violation"));
		return s;
	}

private:
	u64 window_;
	std::deque<TraceEvent> ev_;
	size_t nr_ = 0;
	bool cut_ = false;
	unsigned long dropped_ = 0;
	std::vector<TimelineMark> marks_;
};

/* A window written as one picture when the session finishes. */
class TimelineSink : public WindowSink
{
public:
	TimelineSink(u64 windowNs, const std::string &title, const std::string &subtitle)
		: WindowSink(windowNs), title_(title), note_(subtitle)
	{
	}

	bool open(const std::string &path, std::string *err) { return file_.open(path, err); }
	void retitle(const std::string &title, const std::string &subtitle)
	{
		title_ = title;
		note_ = subtitle;
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *err) override
	{
		TimelineSection s;

		WindowSink::finish(cpus, err);
		s = section(title_, note_);
		file_.write(timelineSvg({s}, title_));
		return file_.commit(err);
	}

private:
	std::string title_, note_;
	kshim::OutputFile file_;
};

class MaskSink : public kshim::TraceSink
{
public:
	MaskSink(std::unique_ptr<kshim::TraceSink> inner, u32 mask)
		: inner_(std::move(inner)), mask_(mask)
	{
	}

	void begin(const std::vector<kshim::TraceCpu> &cpus) override { inner_->begin(cpus); }

	void event(const TraceEvent &e) override
	{
		if (e.type == TraceType::Lost || (mask_ & kshim::traceBit(e.type)))
			inner_->event(e);
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *err) override
	{
		return inner_->finish(cpus, err);
	}

private:
	std::unique_ptr<kshim::TraceSink> inner_;
	u32 mask_;
};

} /* namespace */

std::unique_ptr<kshim::TraceSink> makeTimelineSink(const std::string &path, u64 windowNs,
						   const std::string &title,
						   const std::string &subtitle, std::string *err)
{
	auto s = std::make_unique<TimelineSink>(windowNs, title, subtitle);

	if (!s->open(path, err))
		return nullptr;
	return s;
}

void timelineSinkTitle(kshim::TraceSink *sink, const std::string &title,
		       const std::string &subtitle)
{
	if (auto *t = dynamic_cast<TimelineSink *>(sink))
		t->retitle(title, subtitle);
}

void timelineSinkMark(kshim::TraceSink *sink, const TimelineMark &m)
{
	if (auto *t = dynamic_cast<WindowSink *>(sink))
		t->mark(m);
}

std::unique_ptr<kshim::TraceSink> makeTimelineWindow(u64 windowNs)
{
	return std::make_unique<WindowSink>(windowNs);
}

TimelineSection timelineWindowSection(const kshim::TraceSink *window, const std::string &title,
				      const std::string &subtitle)
{
	const auto *w = dynamic_cast<const WindowSink *>(window);

	BUG_ON(!w);
	return w->section(title, subtitle);
}

bool TimelineBook::open(const std::string &path, const std::string &title, std::string *err)
{
	title_ = title;
	return file_.open(path, err);
}

bool TimelineBook::commit(std::string *err)
{
	if (sections_.empty())
		sections_.push_back({{}, 1, title_, "no machine ran (stopped before the first boot)",
				     {}});
	file_.write(timelineSvg(sections_, title_));
	return file_.commit(err);
}

std::unique_ptr<kshim::TraceSink> maskTraceSink(std::unique_ptr<kshim::TraceSink> inner, u32 mask)
{
	return std::make_unique<MaskSink>(std::move(inner), mask);
}

} /* namespace pokelab */
