package cmdutil

import "os"

// SecondInterrupt returns a channel that closes when sigs delivers its
// second signal. The first one cancels the command's context (internal/app's
// signal context) and the command cleans up; onFirst says so. The second
// cuts the cleanup short. It stops watching when done closes.
func SecondInterrupt(sigs <-chan os.Signal, done <-chan struct{}, onFirst func()) <-chan struct{} {
	abort := make(chan struct{})
	go func() {
		for n := 0; ; {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if n++; n == 1 {
				onFirst()
				continue
			}
			close(abort)
			return
		}
	}()
	return abort
}
