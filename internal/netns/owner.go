package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// Owner owns namespaces created outside tests (ringfire-bench): Close
// deletes them. The zero Owner is ready to use.
type Owner struct {
	mu   sync.Mutex
	fns  []func()
	errs []error
	logs []string
}

// Cleanup registers fn to run at Close, after the ones registered later.
func (o *Owner) Cleanup(fn func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fns = append(o.fns, fn)
}

// Logf records a message (see Logs).
func (o *Owner) Logf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.logs = append(o.logs, fmt.Sprintf(format, args...))
}

// Errorf records an error that Close returns.
func (o *Owner) Errorf(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.errs = append(o.errs, fmt.Errorf(format, args...))
}

// Logs returns what was logged.
func (o *Owner) Logs() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.logs...)
}

// NewPair is the package's NewPair for a program.
func (o *Owner) NewPair() (*Pair, error) { return newPair(o) }

// NewLAN is the package's NewLAN for a program.
func (o *Owner) NewLAN(n int) (*LAN, error) { return newLAN(o, n) }

// Close deletes the namespaces (last created first) and returns the errors
// recorded on the way.
func (o *Owner) Close() error {
	o.mu.Lock()
	fns := o.fns
	o.fns = nil
	o.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return errors.Join(o.errs...)
}

// Available says why namespaces cannot be made here (not root, no `ip`),
// or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("netns: needs root (euid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("netns: iproute2 `ip` not found: %w", err)
	}
	return nil
}
