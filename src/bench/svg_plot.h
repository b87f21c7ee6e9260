// The bench report as a picture a person reads at a glance: one panel per op (small multiples),
// latency against shape for the pack and the baseline on the left axis, their speedup on the
// right axis with the 1.0x line drawn, and a title naming device, date, baseline and L2 mode.
//
// Hand-written SVG 1.1 with no dependency: polylines, lines and text only, so any browser or
// image viewer shows it and a test can check it is well-formed.
#pragma once

#include <string>

#include "bench/report.h"

namespace dietcode {

std::string render_svg(const BenchReport& report);

// Escapes &, <, >, " and ' for SVG text and attribute values.
std::string xml_escape(const std::string& text);

// A round tick step (1, 2 or 5 times a power of ten) giving at most `max_ticks` steps over
// [0, top]; 1 when top <= 0.
double nice_tick_step(double top, int max_ticks);

}  // namespace dietcode
