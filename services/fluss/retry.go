package fluss

import (
	"context"
	"time"
)

// RetryWithin runs call until it succeeds, fails with an error that is not
// retriable (IsRetriable), or d has passed, pausing 20 ms, doubling up to
// 1 s, between tries. It returns call's last error.
func RetryWithin(ctx context.Context, d time.Duration, call func() error) error {
	deadline := time.Now().Add(d)
	pause := 20 * time.Millisecond
	for {
		err := call()
		if err == nil || !IsRetriable(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
