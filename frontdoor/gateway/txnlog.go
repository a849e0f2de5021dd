package gateway

import (
	"context"
	"fmt"

	"github.com/ferrygw/ferry/frontdoor/internal/txnlog"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/runtime"
)

// txnLog connects to Fluss and returns the transaction journal in
// c.TxnLogTable: transaction state then survives this frontdoor and its
// disk, and moves with a transactional id to the next coordinator.
func (c *Config) txnLog(ctx context.Context, app *runtime.App) (*txnlog.Log, error) {
	if err := runtime.CheckFlussReachable(ctx, c.Fluss); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, c.Fluss.ConnectTimeout)
	defer cancel()
	opts := []fluss.Option{fluss.WithLogger(app.Logger), fluss.WithTracerProvider(app.Telemetry.TracerProvider)}
	if c.Fluss.SASLUsername != "" {
		password, err := c.Fluss.SASLPassword()
		if err != nil {
			return nil, err
		}
		opts = append(opts, fluss.WithSASLPlain(c.Fluss.SASLUsername, password))
	}
	client, err := fluss.DialAuthorized(dctx, c.Fluss.Bootstrap, opts...)
	if fluss.IsAuthentication(err) {
		return nil, c.Fluss.LoginError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("fluss: %w", err)
	}
	app.Add(runtime.ComponentFuncs{ComponentName: "fluss-client", ShutdownFunc: func(context.Context) error { return client.Close() }})
	l, err := txnlog.New(client, c.TxnLogTable, 0)
	if err != nil {
		return nil, &runtime.SettingError{Env: EnvTxnLogTable, Flag: FlagTxnLogTable, Value: c.TxnLogTable, Err: err}
	}
	return l, nil
}
