// svg: chart pieces as SVG text (see reporting/svg.h).
#include "reporting/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

std::string printf_double(const char* fmt, int digits, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, digits, v);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    bool all_zero = s.find_first_not_of("-0.") == std::string::npos;
    if (all_zero) s.erase(0, 1);
  }
  return s;
}

// x with 2 decimals for attribute values (pixels).
std::string px_text(double x) {
  if (!std::isfinite(x)) x = 0;
  return printf_double("%.*f", 2, x);
}

}  // namespace

std::string format_number(double v, int sig) {
  if (!std::isfinite(v)) return "n/a";
  if (std::fabs(v) >= 1e15) return printf_double("%.*e", sig - 1, v);
  if (std::fabs(v) >= std::pow(10.0, sig) && std::fabs(v) < 1e15) return printf_double("%.*f", 0, v);
  return printf_double("%.*g", sig, v);
}

std::string format_tick(double v, double step) {
  if (!std::isfinite(v) || !std::isfinite(step) || step <= 0) return format_number(v);
  if (std::fabs(v) >= 1e15 || step < 1e-9) return format_number(v, 3);
  int decimals = 0;
  while (decimals < 9 &&
         std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6)
    ++decimals;
  return printf_double("%.*f", decimals, v);
}

Axis nice_axis(double lo, double hi, int max_ticks, bool include_zero) {
  Axis a;
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (include_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (hi - lo <= std::fabs(hi) * 1e-12) {  // one value: a range around it
    const double pad = hi == 0 ? 1 : std::fabs(hi) * 0.1;
    lo = include_zero && lo >= 0 ? 0 : lo - pad;
    hi = hi + pad;
  }
  if (max_ticks < 2) max_ticks = 2;
  const double raw = (hi - lo) / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  a.step = step;
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  for (int k = 0; k <= max_ticks + 2; ++k) {
    const double t = a.lo + k * step;
    if (t > a.hi + step * 1e-6) break;
    a.ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return a;
}

double Frame::px(double v) const {
  const double span = x.hi - x.lo;
  return left + (span > 0 ? (v - x.lo) / span : 0.5) * plot_width();
}

double Frame::py(double v) const {
  const double span = y.hi - y.lo;
  return top + plot_height() - (span > 0 ? (v - y.lo) / span : 0.5) * plot_height();
}

std::string svg_begin(const std::string& id, double width, double height, const std::string& label) {
  return "<svg id=\"" + xml_escape(id) + "\" class=\"chart\" viewBox=\"0 0 " + px_text(width) + " " + px_text(height) +
         "\" width=\"" + px_text(width) + "\" height=\"" + px_text(height) + "\" role=\"img\" aria-label=\"" +
         xml_escape(label) + "\">\n";
}

std::string svg_end() { return "</svg>\n"; }

std::string svg_text(double x, double y, const std::string& text, const std::string& anchor, const std::string& attrs) {
  return "<text x=\"" + px_text(x) + "\" y=\"" + px_text(y) + "\" text-anchor=\"" + anchor + "\"" +
         (attrs.empty() ? "" : " " + attrs) + ">" + xml_escape(text) + "</text>\n";
}

std::string svg_axes(const Frame& f, const std::string& x_title, const std::string& y_title, bool x_ticks) {
  std::string s = "<g class=\"axes\">\n";
  const double x0 = f.left, x1 = f.left + f.plot_width(), y0 = f.top, y1 = f.top + f.plot_height();
  for (double t : f.y.ticks) {
    const double y = f.py(t);
    s += "<line class=\"grid\" x1=\"" + px_text(x0) + "\" x2=\"" + px_text(x1) + "\" y1=\"" + px_text(y) + "\" y2=\"" +
         px_text(y) + "\"/>\n";
    s += svg_text(x0 - 6, y + 4, format_tick(t, f.y.step), "end", "class=\"tick y-tick\"");
  }
  if (x_ticks)
    for (double t : f.x.ticks) {
      const double x = f.px(t);
      s += "<line class=\"tick-mark\" x1=\"" + px_text(x) + "\" x2=\"" + px_text(x) + "\" y1=\"" + px_text(y1) +
           "\" y2=\"" + px_text(y1 + 5) + "\"/>\n";
      s += svg_text(x, y1 + 18, format_tick(t, f.x.step), "middle", "class=\"tick x-tick\"");
    }
  s += "<rect class=\"frame\" x=\"" + px_text(x0) + "\" y=\"" + px_text(y0) + "\" width=\"" + px_text(x1 - x0) +
       "\" height=\"" + px_text(y1 - y0) + "\"/>\n";
  s += svg_text((x0 + x1) / 2, f.height - 8, x_title, "middle", "class=\"axis-title\"");
  const double ym = (y0 + y1) / 2;
  s += "<text class=\"axis-title\" text-anchor=\"middle\" transform=\"translate(16 " + px_text(ym) +
       ") rotate(-90)\">" + xml_escape(y_title) + "</text>\n";
  return s + "</g>\n";
}

std::string svg_polyline(const Frame& f, const Points& pts, const std::string& color, const std::string& attrs,
                         const std::string& title) {
  std::string p;
  for (const auto& xy : pts) p += (p.empty() ? "" : " ") + px_text(f.px(xy.first)) + "," + px_text(f.py(xy.second));
  return "<polyline points=\"" + p + "\" fill=\"none\" stroke=\"" + color + "\"" + (attrs.empty() ? "" : " " + attrs) +
         "><title>" + xml_escape(title) + "</title></polyline>\n";
}

std::string svg_markers(const Frame& f, const Points& pts, const std::string& color, const std::string& attrs,
                        const std::vector<std::string>& titles) {
  std::string s;
  for (size_t k = 0; k < pts.size(); ++k)
    s += "<circle cx=\"" + px_text(f.px(pts[k].first)) + "\" cy=\"" + px_text(f.py(pts[k].second)) +
         "\" r=\"3\" fill=\"" + color + "\"" + (attrs.empty() ? "" : " " + attrs) + "><title>" +
         xml_escape(k < titles.size() ? titles[k] : "") + "</title></circle>\n";
  return s;
}

std::string svg_rect(double x, double y, double w, double h, const std::string& color, const std::string& attrs,
                     const std::string& title) {
  return "<rect x=\"" + px_text(x) + "\" y=\"" + px_text(y) + "\" width=\"" + px_text(std::max(0.0, w)) +
         "\" height=\"" + px_text(std::max(0.0, h)) + "\" fill=\"" + color + "\"" + (attrs.empty() ? "" : " " + attrs) +
         "><title>" + xml_escape(title) + "</title></rect>\n";
}

std::string svg_legend(double x, double y, double width, const std::vector<LegendEntry>& entries, double& height_used) {
  std::string s = "<g class=\"legend\">\n";
  double cx = x, cy = y;
  const double row = 18;
  for (const LegendEntry& e : entries) {
    const double w = 26 + 7.0 * double(e.label.size());
    if (cx > x && cx + w > x + width) cx = x, cy += row;
    s += "<g class=\"legend-item\"" + (e.attrs.empty() ? "" : " " + e.attrs) + ">";
    s += "<rect x=\"" + px_text(cx) + "\" y=\"" + px_text(cy) + "\" width=\"12\" height=\"12\" fill=\"" + e.color +
         "\"/>";
    s += svg_text(cx + 16, cy + 10, e.label, "start");
    s += "</g>\n";
    cx += w;
  }
  height_used = entries.empty() ? 0 : cy - y + row;
  return s + "</g>\n";
}

std::string series_color(int i) {
  static const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  if (i >= 0 && i < 10) return palette[i];
  char buf[48];
  std::snprintf(buf, sizeof buf, "hsl(%d, 65%%, 42%%)", int(std::fmod(i * 137.508, 360.0)));
  return buf;
}
