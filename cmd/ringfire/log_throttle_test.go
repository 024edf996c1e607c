package main

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time            { return c.t }
func (c *fakeClock) add(d time.Duration)       { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock                 { return &fakeClock{t: time.Unix(1_000_000, 0)} }
func noTime(_ []string, a slog.Attr) slog.Attr { return dropTime(a) }

// dropTime removes the time attribute, for lines a test compares.
func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// throttledLogger is newLogger's text logger on clock, writing to b.
func throttledLogger(b *bytes.Buffer, clock *fakeClock) *slog.Logger {
	return slog.New(newThrottleHandler(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: noTime}), time.Second, clock.now))
}

func lines(b *bytes.Buffer) []string {
	s := strings.TrimSpace(b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// A key's first line is logged, the others within a second are counted,
// and the next line after it carries their count; keys are independent.
func TestThrottleAllow(t *testing.T) {
	clock := newFakeClock()
	th := newThrottle(time.Second, clock.now)
	step := func(kind, reason string, wantN int, wantOK bool) {
		t.Helper()
		if n, ok := th.allow(kind, reason); n != wantN || ok != wantOK {
			t.Fatalf("allow(%q, %q) at %v = %d, %v; want %d, %v", kind, reason, clock.t.Sub(time.Unix(1_000_000, 0)), n, ok, wantN, wantOK)
		}
	}
	step("refused", "pending", 0, true)
	for range 5 {
		clock.add(100 * time.Millisecond)
		step("refused", "pending", 0, false)
	}
	step("refused", "per address", 0, true) // another reason
	step("rejected", "pending", 0, true)    // another kind
	clock.add(500 * time.Millisecond)       // 1 s after the first line
	step("refused", "pending", 5, true)
	step("refused", "pending", 0, false)
	clock.add(time.Second)
	step("refused", "pending", 1, true)
	clock.add(time.Hour)
	step("refused", "pending", 0, true)
}

// Past maxThrottleKeys, a new reason shares its kind's key, and keys with
// nothing to carry are forgotten first.
func TestThrottleKeyBound(t *testing.T) {
	clock := newFakeClock()
	th := newThrottle(time.Second, clock.now)
	for i := range maxThrottleKeys {
		if _, ok := th.allow("rejected", fmt.Sprint(i)); !ok {
			t.Fatalf("reason %d suppressed", i)
		}
	}
	// Every key is within its second: a new reason goes to the shared key.
	if _, ok := th.allow("rejected", "new 1"); !ok {
		t.Fatal("the shared key's first line suppressed")
	}
	for i := range 100 {
		if _, ok := th.allow("rejected", fmt.Sprint("new ", i+2)); ok {
			t.Fatalf("new reason %d logged within the shared key's second", i+2)
		}
	}
	if len(th.keys) != maxThrottleKeys+1 {
		t.Fatalf("%d keys, want %d", len(th.keys), maxThrottleKeys+1)
	}
	// A second later, the idle keys are forgotten to make room.
	clock.add(time.Second)
	th.allow("rejected", "0") // suppressed nothing: logged, kept
	if n, ok := th.allow("rejected", "later"); n != 0 || !ok {
		t.Fatalf("after pruning: %d, %v", n, ok)
	}
	if len(th.keys) > 3 { // "0", the shared key (100 to carry), "later"
		t.Fatalf("%d keys after pruning, want 3", len(th.keys))
	}
	if _, ok := th.keys["rejected\x00\x00"]; !ok {
		t.Fatal("the shared key, with a count to carry, was forgotten")
	}
}

// A flood of refusals and rejections from many peers is logged once a
// second per kind and reason, the next line carrying the count; each
// unit's logger (With) has its own keys; lag lines are not throttled.
func TestServerEventsThrottled(t *testing.T) {
	var b bytes.Buffer
	clock := newFakeClock()
	log := throttledLogger(&b, clock)
	errPending := errors.New("too many handshakes pending")
	errMagic := errors.New("bad magic")
	peer := func(i int) net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 0, byte(i>>8), byte(i)), Port: 40000 + i} }
	for i := range 1000 {
		logEvent(log, replica.ServerEvent{Kind: replica.EventRefused, Refusal: replica.RefusedAddrPending, Peer: peer(i), Err: fmt.Errorf("refuse %v: %w", peer(i), errPending)})
		logEvent(log, replica.ServerEvent{Kind: replica.EventRejected, Peer: peer(i), Err: fmt.Errorf("hello: %w", errMagic)})
	}
	logEvent(log.With("ring", "b"), replica.ServerEvent{Kind: replica.EventRefused, Refusal: replica.RefusedAddrPending, Peer: peer(1), Err: errPending})
	logEvent(log, replica.ServerEvent{Kind: replica.EventLagging, Mirror: replica.MirrorInfo{Name: "m"}})
	logEvent(log, replica.ServerEvent{Kind: replica.EventLagging, Mirror: replica.MirrorInfo{Name: "m"}})
	clock.add(time.Second)
	logEvent(log, replica.ServerEvent{Kind: replica.EventRefused, Refusal: replica.RefusedAddrPending, Suppressed: 3, Peer: peer(7), Err: errPending})
	want := []string{
		`level=WARN msg="connection refused" kind=max_pending_per_addr refusals_not_logged=0 peer=10.0.0.0:40000 err="refuse 10.0.0.0:40000: too many handshakes pending"`,
		`level=INFO msg="mirror rejected" peer=10.0.0.0:40000 err="hello: bad magic"`,
		`level=WARN msg="connection refused" ring=b kind=max_pending_per_addr refusals_not_logged=0 peer=10.0.0.1:40001 err="too many handshakes pending"`,
		`level=WARN msg="mirror lagging: past half the ring's capacity" mirror=m`,
		`level=WARN msg="mirror lagging: past half the ring's capacity" mirror=m`,
		`level=WARN msg="connection refused" kind=max_pending_per_addr refusals_not_logged=3 peer=10.0.0.7:40007 err="too many handshakes pending" suppressed=999`,
	}
	got := lines(&b)
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !strings.HasPrefix(g, w) || w == "" {
			t.Fatalf("line %d:\n got %s\nwant %s…\nlog:\n%s", i+1, g, w, b.String())
		}
	}
}

// Connects and disconnects are throttled by the peer's host: a peer that
// loops connect–close gets a line a second, another peer its own.
func TestConnectsThrottledByHost(t *testing.T) {
	var b bytes.Buffer
	clock := newFakeClock()
	log := throttledLogger(&b, clock)
	a := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9)}
	for i := range 500 {
		a.Port = 50000 + i
		logEvent(log, replica.ServerEvent{Kind: replica.EventConnected, Peer: a})
		logEvent(log, replica.ServerEvent{Kind: replica.EventDisconnected, Peer: a})
	}
	logEvent(log, replica.ServerEvent{Kind: replica.EventConnected, Peer: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1}})
	clock.add(time.Second)
	logEvent(log, replica.ServerEvent{Kind: replica.EventConnected, Peer: a})
	got := lines(&b)
	if len(got) != 4 || !strings.Contains(got[0], `msg="mirror connected" peer=10.0.0.9:50000`) ||
		!strings.Contains(got[1], `msg="mirror disconnected" peer=10.0.0.9:50000`) ||
		!strings.Contains(got[2], `peer=10.0.0.2:1`) || !strings.HasSuffix(got[3], "suppressed=499") {
		t.Fatalf("log:\n%s", b.String())
	}
}

// A source that drops every session at once: the mirror logs a connect
// and a disconnect a second, with the count suppressed.
func TestMirrorEventsThrottled(t *testing.T) {
	var b bytes.Buffer
	clock := newFakeClock()
	on := mirrorEvents(throttledLogger(&b, clock), clock.now)
	for range 300 {
		on(replica.MirrorEvent{Kind: replica.MirrorConnected, Source: "src:1"})
		on(replica.MirrorEvent{Kind: replica.MirrorDisconnected, Source: "src:1", Err: fmt.Errorf("frame: %w", errors.New("bad kind"))})
	}
	clock.add(time.Second)
	on(replica.MirrorEvent{Kind: replica.MirrorConnected, Source: "src:1"})
	want := []string{
		`level=INFO msg="connected to the source" source=src:1`,
		`level=WARN msg="disconnected from the source" source=src:1 reason="frame: bad kind"`,
		`level=INFO msg="connected to the source" source=src:1 suppressed=299`,
	}
	if got := lines(&b); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The throttle attribute prints nothing through a handler that does not
// throttle, and the JSON logger throttles as the text one does.
func TestThrottleAttrInvisible(t *testing.T) {
	var b bytes.Buffer
	slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: noTime})).Info("x", throttled("why"), "k", 1)
	if got := strings.TrimSpace(b.String()); got != "level=INFO msg=x k=1" {
		t.Fatalf("plain handler: %s", got)
	}
	b.Reset()
	log, err := newLogger("json", &b)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		log.Warn("refused", throttled("why"), "k", 1)
	}
	if got := lines(&b); len(got) != 1 || strings.Contains(got[0], "throttle") {
		t.Fatalf("json: %q", got)
	}
}

// Acceptance: 2,000 refused and rejected connections logged through the
// CLI's logger (the real clock) give at most a line per kind per second
// they took; every one was logged before.
func TestRefusalFloodLogBounded(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger("text", &b)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		p := &net.TCPAddr{IP: net.IPv4(10, 1, byte(i>>8), byte(i)), Port: 1024 + i}
		logEvent(log, replica.ServerEvent{Kind: replica.EventRefused, Peer: p, Err: fmt.Errorf("from %v: %w", p, errors.New("limit"))})
		logEvent(log, replica.ServerEvent{Kind: replica.EventRejected, Peer: p, Err: fmt.Errorf("from %v: %w", p, errors.New("bad hello"))})
	}
	seconds := int(time.Since(start)/time.Second) + 1
	if n := len(lines(&b)); n > 2*seconds {
		t.Fatalf("%d lines for 2,000 refusals in %d s, want at most %d", n, seconds, 2*seconds)
	}
}
