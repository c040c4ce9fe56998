// html_report: assembles the one self-contained report page from a metrics file and an optional
// timeline: inline CSS, inline SVG charts, a few lines of inline script, nothing fetched. Pure:
// records in, HTML text out. Charts (each an <svg> with a stable id) are drawn only from records
// that exist; a chart with no records is a sentence saying so.
//   loss-chart        loss per rank over steps (one polyline per rank)
//   accuracy-chart    test accuracy per epoch
//   step-time-chart   per-rank stacked bars: data, compute, comm minus wait, wait (mean of logged steps)
//   bytes-chart       allreduce bytes per logged step
//   layer-norm-chart  per-layer gradient norms per inspected step (with a table of every field)
//   timeline-summary  (a table) per-rank time in each slice name, from the timeline
//   timeline-lanes    one optimizer step per rank and thread track (reporting/timeline_lanes.h)
#pragma once
#include <string>

#include "reporting/metrics_reader.h"
#include "reporting/timeline_reader.h"

struct ReportInput {
  std::string metrics_name;  // shown on the page as given
  Metrics metrics;
  bool has_timeline = false;
  std::string timeline_name;
  Timeline timeline;
  long lane_step = -1;         // --step: the step timeline-lanes draws; -1: default_lane_step
  bool timeline_only = false;  // --section timeline: the header and the timeline section only
};

std::string build_report_html(const ReportInput& in);
