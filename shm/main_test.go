package shm

// The test binary's entry point. Tests that need other processes re-execute
// this binary (reexecArgs) with an environment variable giving the child its
// role; TestMain runs that role as a plain function and exits, so no test
// function exists only to be skipped in a normal run.

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"testing"
	"time"
)

// childRoles maps each role variable to the child it selects; run gets the
// variable's value and returns nil on success.
var childRoles = []struct {
	env string
	run func(v string) error
}{
	{mpEnvRole, mpChildMain},     // multiproc_test.go, futexro_test.go
	{ppEnv, ppEchoMain},          // ppchild_test.go
	{mpmcEnvRole, mpmcChildMain}, // mpmcchild_test.go
}

func TestMain(m *testing.M) {
	for _, r := range childRoles {
		if v := os.Getenv(r.env); v != "" {
			os.Exit(runChild(r.env, v, r.run))
		}
	}
	os.Exit(m.Run())
}

// runChild runs a child role and returns its exit status: 0 on success, 1
// when it returned an error (written to stderr). The -test.timeout the
// parent passed (reexecArgs) bounds it: past it the child dumps its
// goroutines to stderr and exits with status 2, as a timed-out test would.
func runChild(env, v string, run func(string) error) int {
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				time.AfterFunc(d, func() {
					fmt.Fprintf(os.Stderr, "child process (%s) timed out after %v\n", env, d)
					pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
					os.Exit(2)
				})
			}
		}
	}
	if err := run(v); err != nil {
		fmt.Fprintf(os.Stderr, "child process (%s): FAIL: %v\n", env, err)
		return 1
	}
	return 0
}
