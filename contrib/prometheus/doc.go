// Package prometheus holds ringfire's Prometheus alert rules:
// ringfire.rules.yml (a mirror lagging or stalled, gaps, a NAK storm,
// refused connections, a source silent while mirrors are connected), on
// the metrics of `ringfire run` and `ringfire serve --metrics`, and
// ringfire.rules_test.yml, the promtool unit tests that fire and hold
// back each alert. The package has no Go API: its test runs `promtool
// check rules` and `promtool test rules`. cmd/ringfire's
// TestAlertRulesNameRealMetrics checks that every expression names a
// metric ringfire exports. contrib/README.md says how to use them.
package prometheus
