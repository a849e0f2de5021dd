package fluss

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRetryWithin(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := RetryWithin(ctx, time.Minute, func() error {
		if calls++; calls < 3 {
			return ErrUnreachable
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retriable twice, then ok: err %v after %d calls, want nil after 3", err, calls)
	}

	final := errors.New("not retriable")
	calls = 0
	if err := RetryWithin(ctx, time.Minute, func() error { calls++; return final }); err != final || calls != 1 {
		t.Errorf("not retriable: err %v after %d calls, want it after 1", err, calls)
	}

	calls = 0
	if err := RetryWithin(ctx, 50*time.Millisecond, func() error { calls++; return ErrUnreachable }); !errors.Is(err, ErrUnreachable) || calls < 2 || calls > 4 {
		t.Errorf("retriable past the bound: err %v after %d calls, want ErrUnreachable after 2-4", err, calls)
	}
}
