package proc

import (
	"errors"
	"os/exec"

	"github.com/ringfire/ringfire/internal/netns"
)

// Launcher starts processes from one OS thread that stays in a namespace
// for the launcher's whole life (netns.NS.Go): a child forked there
// inherits the namespace, and its Pdeathsig, which the kernel sends when
// the thread that forked it exits, fires only when the launcher closes or
// this process dies, never because the runtime retired a thread.
type Launcher struct {
	reqs chan launchReq
	done <-chan struct{}
}

type launchReq struct {
	cmd *exec.Cmd
	err chan error
}

func NewLauncher(ns *netns.NS) *Launcher {
	l := &Launcher{reqs: make(chan launchReq)}
	l.done = ns.Go(func() {
		for q := range l.reqs {
			q.err <- q.cmd.Start()
		}
	})
	return l
}

// start starts cmd in the launcher's namespace.
func (l *Launcher) start(cmd *exec.Cmd) error {
	q := launchReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case l.reqs <- q:
		return <-q.err
	case <-l.done:
		return errors.New("proc: launcher thread is gone (entering the namespace failed)")
	}
}

// Close ends the launcher's thread (after its children are stopped).
func (l *Launcher) Close() {
	close(l.reqs)
	<-l.done
}
