package prometheus

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// promtool runs promtool with args in this directory and fails the test
// on an error, with its output.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Skipf(t, "promtool is missing (Debian package prometheus; scripts/deps.sh test installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The rules parse: promtool finds all seven, with valid PromQL and
// templates.
func TestCheckRules(t *testing.T) {
	out := promtool(t, "check", "rules", "ringfire.rules.yml")
	if !strings.Contains(out, "SUCCESS: 7 rules found") {
		t.Fatalf("promtool check rules: want 7 rules:\n%s", out)
	}
}

// Each alert fires on the series that should fire it, and only on those.
func TestRulesUnitTests(t *testing.T) {
	out := promtool(t, "test", "rules", "ringfire.rules_test.yml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}
