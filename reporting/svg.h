// svg: small helpers for the report's inline SVG charts: text escaping, number formatting, "nice"
// axis ticks, a plot frame mapping data to pixels, and the pieces charts are drawn from (axes with
// tick labels, polylines, markers, bars, legends). Every function returns SVG/HTML text; nothing
// refers to anything outside the page.
#pragma once
#include <string>
#include <utility>
#include <vector>

// Escapes & < > " ' for HTML/SVG text and attribute values.
std::string xml_escape(const std::string& s);

// v with at most sig significant digits ("%.*g"), never "-0" or an exponent below 1e15.
std::string format_number(double v, int sig = 4);
// A tick label: enough decimals for the tick step (0.25 -> "0.25", 20 -> "20").
std::string format_tick(double v, double step);

struct Axis {
  double lo = 0, hi = 1;
  double step = 0.2;
  std::vector<double> ticks;  // lo, lo+step, ..., hi
};
// Round ticks (steps of 1, 2, 2.5 or 5 times a power of ten) covering [lo, hi], at most
// max_ticks + 1 of them; include_zero stretches the range to 0. A single value or a non-finite
// range still gives a usable axis.
Axis nice_axis(double lo, double hi, int max_ticks = 6, bool include_zero = false);

// A plot area inside an SVG of width x height with margins; maps data to pixels.
struct Frame {
  double width = 720, height = 300;
  double left = 70, right = 20, top = 20, bottom = 48;
  Axis x, y;
  double plot_width() const { return width - left - right; }
  double plot_height() const { return height - top - bottom; }
  double px(double v) const;  // data x -> pixel x
  double py(double v) const;  // data y -> pixel y
};

using Points = std::vector<std::pair<double, double>>;

// <svg id=...> with a viewBox, width/height, role="img" and an aria-label; svg_end closes it.
std::string svg_begin(const std::string& id, double width, double height, const std::string& label);
std::string svg_end();
// Frame border, grid lines, ticks with labels on both axes (x ticks from f.x unless x_ticks is
// false, for charts that label categories themselves), and the axis titles.
std::string svg_axes(const Frame& f, const std::string& x_title, const std::string& y_title, bool x_ticks = true);
// One <polyline> through the points (data coordinates); attrs is extra attribute text.
std::string svg_polyline(const Frame& f, const Points& pts, const std::string& color, const std::string& attrs,
                         const std::string& title);
// A <circle> per point, with a <title> tooltip each.
std::string svg_markers(const Frame& f, const Points& pts, const std::string& color, const std::string& attrs,
                        const std::vector<std::string>& titles);
// A <rect> in pixel coordinates with a <title> tooltip.
std::string svg_rect(double x, double y, double w, double h, const std::string& color, const std::string& attrs,
                     const std::string& title);
// <text> at a pixel position; anchor is start, middle or end.
std::string svg_text(double x, double y, const std::string& text, const std::string& anchor,
                     const std::string& attrs = "");

struct LegendEntry {
  std::string label, color, attrs;  // attrs: e.g. data-rank="2" (the page's script uses it)
};
// A row-wrapped legend of colour swatches starting at pixel (x, y), at most width wide; returns
// the SVG and sets height_used to the pixels it took.
std::string svg_legend(double x, double y, double width, const std::vector<LegendEntry>& entries, double& height_used);

// Distinct colour of series i (ranks, parts of a bar).
std::string series_color(int i);
