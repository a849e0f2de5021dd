// Package appender is appendsvc's AppendService: it turns Arrow batches into
// Fluss log record batches (services/fluss/logbatch) and appends them to
// their bucket's leader, keeping each bucket's batches in arrival order and
// answering every job only with what Fluss acknowledged.
package appender

import (
	"fmt"
	"time"

	"github.com/ferrygw/ferry/services/fluss/logbatch"
)

// Config tunes the service; the zero value of a field means its default.
type Config struct {
	// DefaultTimeout applies to requests with timeout_ms 0.
	DefaultTimeout time.Duration
	// MaxTimeout caps a request's timeout_ms.
	MaxTimeout time.Duration
	// MaxPending bounds the jobs of one stream that are received but not
	// yet answered; Recv waits when it is reached (backpressure).
	MaxPending int
	// MaxCoalesceBytes bounds how many bytes of consecutive queued jobs for
	// one bucket go to Fluss in a single produce request (each job stays its
	// own batch). 1 disables coalescing.
	MaxCoalesceBytes int
	// RetryBackoffMin and RetryBackoffMax bound the wait between attempts
	// on retriable errors (doubling from min up to max).
	RetryBackoffMin time.Duration
	RetryBackoffMax time.Duration
	// Magic is the log batch format written: logbatch.MagicV0 (what the
	// Fluss 0.9.1 Java client writes, the default) or logbatch.MagicV1.
	Magic byte
}

// Defaults.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxTimeout       = 5 * time.Minute
	DefaultMaxPending       = 1024
	DefaultMaxCoalesceBytes = 4 << 20
	DefaultRetryBackoffMin  = 50 * time.Millisecond
	DefaultRetryBackoffMax  = 2 * time.Second
)

// WithDefaults fills in zero fields.
func (c Config) WithDefaults() Config {
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxCoalesceBytes == 0 {
		c.MaxCoalesceBytes = DefaultMaxCoalesceBytes
	}
	if c.RetryBackoffMin == 0 {
		c.RetryBackoffMin = DefaultRetryBackoffMin
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = DefaultRetryBackoffMax
	}
	return c
}

// Validate names the first bad field (after WithDefaults).
func (c Config) Validate() error {
	switch {
	case c.DefaultTimeout <= 0:
		return fmt.Errorf("appender: Config.DefaultTimeout %v must be positive", c.DefaultTimeout)
	case c.MaxTimeout < c.DefaultTimeout:
		return fmt.Errorf("appender: Config.MaxTimeout %v is below DefaultTimeout %v", c.MaxTimeout, c.DefaultTimeout)
	case c.MaxPending <= 0:
		return fmt.Errorf("appender: Config.MaxPending %d must be positive", c.MaxPending)
	case c.MaxCoalesceBytes <= 0:
		return fmt.Errorf("appender: Config.MaxCoalesceBytes %d must be positive", c.MaxCoalesceBytes)
	case c.RetryBackoffMin <= 0:
		return fmt.Errorf("appender: Config.RetryBackoffMin %v must be positive", c.RetryBackoffMin)
	case c.RetryBackoffMax < c.RetryBackoffMin:
		return fmt.Errorf("appender: Config.RetryBackoffMax %v is below RetryBackoffMin %v", c.RetryBackoffMax, c.RetryBackoffMin)
	case c.Magic != logbatch.MagicV0 && c.Magic != logbatch.MagicV1:
		return fmt.Errorf("appender: Config.Magic %d is not 0 or 1", c.Magic)
	}
	return nil
}
