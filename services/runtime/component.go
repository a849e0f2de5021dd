package runtime

import (
	"context"
	"errors"
)

// Component is anything with an explicit lifecycle that the App starts in
// order and shuts down in reverse order: the gRPC server, a Kafka listener,
// a pool of Fluss connections.
//
// Start must not block: it acquires what the component needs (sockets,
// connections), launches its goroutines and returns. Its ctx bounds Start
// only and is cancelled when the process is asked to stop, before
// Shutdown runs: background work must be stopped by Shutdown, not by ctx,
// or the reverse shutdown order is lost. A failure after Start
// returned is reported through host.ReportFatal, which makes the App shut
// everything down. Shutdown must stop every goroutine Start launched, and
// give up (returning ctx.Err()) when ctx expires.
type Component interface {
	Name() string
	Start(ctx context.Context, host Host) error
	Shutdown(ctx context.Context) error
}

// Host is what a running component can ask of the App.
type Host interface {
	// ReportFatal asks the App to shut down and exit non-zero because of err.
	// It never blocks and may be called from any goroutine.
	ReportFatal(err error)
}

// ComponentFuncs adapts plain functions to Component, for small pieces that
// do not deserve their own type. A nil StartFunc or ShutdownFunc does nothing.
type ComponentFuncs struct {
	ComponentName string
	StartFunc     func(ctx context.Context, host Host) error
	ShutdownFunc  func(ctx context.Context) error
}

func (c ComponentFuncs) Name() string { return c.ComponentName }

func (c ComponentFuncs) Start(ctx context.Context, host Host) error {
	if c.StartFunc == nil {
		return nil
	}
	return c.StartFunc(ctx, host)
}

func (c ComponentFuncs) Shutdown(ctx context.Context) error {
	if c.ShutdownFunc == nil {
		return nil
	}
	return c.ShutdownFunc(ctx)
}

// ErrComponentFailed wraps an error a component reported after it started,
// so callers can tell runtime failures from startup failures.
var ErrComponentFailed = errors.New("component failed")
