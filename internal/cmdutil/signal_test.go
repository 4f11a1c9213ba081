package cmdutil

import (
	"os"
	"testing"
	"time"
)

// The first interrupt cancels the run (internal/app) and the cleanup runs;
// the second cuts it short.
func TestSecondInterrupt(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	defer close(done)
	first := make(chan struct{})
	abort := SecondInterrupt(sigs, done, func() { close(first) })
	sigs <- os.Interrupt
	<-first
	select {
	case <-abort:
		t.Fatal("one interrupt must not cut the cleanup short")
	default:
	}
	sigs <- os.Interrupt
	select {
	case <-abort:
	case <-time.After(time.Minute):
		t.Fatal("the second interrupt did not abort the cleanup")
	}
}
