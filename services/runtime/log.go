package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// NewLogger builds the service logger: text or JSON on w at the configured
// level, with a "service" attribute on every record.
func NewLogger(cfg LogConfig, service string, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Level)); err != nil {
		return nil, &SettingError{Env: EnvLogLevel, Flag: FlagLogLevel, Value: cfg.Level, Err: err}
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch cfg.Format {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, &SettingError{Env: EnvLogFormat, Flag: FlagLogFormat, Value: cfg.Format,
			Err: fmt.Errorf("must be one of text|json")}
	}
	return slog.New(h).With(slog.String("service", service)), nil
}

type loggerKey struct{}

// WithLogger returns a context carrying l, so request-scoped code can log
// with the attributes its caller added without a package-level logger.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// LoggerFrom returns the logger stored by WithLogger, or one that discards
// everything: a missing logger must never crash a request path.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
