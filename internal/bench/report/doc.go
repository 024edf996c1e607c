// Package report holds what a ringfire-bench run measured (Report and the
// types of its sections) and writes it: aligned text tables for the
// terminal, JSON (bench.json, which ReadJSON reads back), two SVG charts,
// and the page docs/benchmarks.md. It measures nothing and imports no
// other part of the bench, so a committed bench.json can be rendered
// again without root (ringfire-bench --render).
//
// # Where a report comes from and goes
//
//	bench.Run ──fills──▶ Report ──WriteJSON──▶ docs/bench/bench.json
//	                       │                        │
//	                       │◀────────ReadJSON───────┘ (--render)
//	                       ├─WriteTable──▶ the terminal
//	                       ├─WriteSVG────▶ docs/bench/latency.svg, throughput.svg
//	                       │               (and openloop.svg with open-loop figures)
//	                       └─WriteMarkdown▶ docs/benchmarks.md: method, machine,
//	                                        charts, per section what it measures
//	                                        and its tables, the floors, no date
//
// Each section (pingpong, stress, stages, fanout, sendcost, deployed,
// rings, openloop, archive) renders as one table per measurement (sections in tables.go);
// text and page share those tables, so the terminal and the page agree.
//
// # Files
//
//	report.go          Report, Machine, the sections' types, Duration
//	rings.go           the rings section's types
//	openloop.go        the openloop section's types, the knee
//	archive.go         the archive section's types
//	archive_catchup.go its catch-up's types
//	stall.go           Stall, the machine's own pauses
//	hiccups.go         Hiccups, a sleeping thread's oversleeps
//	waits.go           bench wait names: loop-X, a mode, the default
//	tables.go          the sections and their tables
//	tables_deployed.go the deployed section's tables
//	tables_rings.go    the rings section's tables
//	tables_openloop.go the openloop section's tables, its processes' roles
//	tables_archive.go  the archive section's tables
//	tables_archive_catchup.go  its catch-up's table
//	tables_floors.go   the floors gathered in one table
//	format.go          how figures are written (µs, rates, ratios)
//	text.go            WriteTable
//	json.go            WriteJSON, ReadJSON
//	page.go            WriteMarkdown, the page
//	page_about.go      the page's fixed text: method, sections, floors
//	svg*.go            WriteSVG and its charts (svg_openloop.go: the
//	                   open loop's throughput-latency curve)
package report
