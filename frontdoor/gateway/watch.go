package gateway

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"github.com/ferrygw/ferry/frontdoor/internal/oauthbearer"
	"github.com/ferrygw/ferry/frontdoor/internal/reload"
	"github.com/ferrygw/ferry/frontdoor/internal/saslscram"
	"github.com/ferrygw/ferry/services/runtime"
)

// reloadedACLs authorizes with the ACLs in force.
type reloadedACLs struct{ f *reload.File[*acl.Rules] }

func (r reloadedACLs) Allowed(principal string, op acl.Operation, topic string) bool {
	return r.f.Value().Allowed(principal, op, topic)
}

func (r reloadedACLs) AllowedGroup(principal string, op acl.Operation, group string) bool {
	return r.f.Value().AllowedGroup(principal, op, group)
}

func (r reloadedACLs) AllowedTransactionalID(principal string, op acl.Operation, id string) bool {
	return r.f.Value().AllowedTransactionalID(principal, op, id)
}

func (r reloadedACLs) AllowedCluster(principal string, op acl.Operation) bool {
	return r.f.Value().AllowedCluster(principal, op)
}

func (r reloadedACLs) Bindings() []acl.Binding { return r.f.Value().Bindings() }

// reloadedSCRAM starts SCRAM exchanges against the credentials in force.
type reloadedSCRAM struct {
	f       *reload.File[*saslscram.Store]
	fakeKey []byte // salts answered for unknown users (per process)
}

func (r reloadedSCRAM) Mechanisms() []string { return saslscram.Mechanisms }

func (r reloadedSCRAM) Start(mechanism string) (kafka.ScramExchange, error) {
	return saslscram.NewServer(mechanism, r.f.Value().Lookup, r.fakeKey)
}

// reloadedJWKS checks OAUTHBEARER tokens against the key set in force.
type reloadedJWKS struct {
	f     *reload.File[*oauthbearer.KeySet]
	rules oauthbearer.Rules
}

func (r reloadedJWKS) Authenticate(msg []byte) (string, time.Time, error) {
	token, err := oauthbearer.BearerToken(msg)
	if err != nil {
		return "", time.Time{}, err
	}
	t, err := oauthbearer.Validate(token, r.f.Value(), r.rules, time.Now())
	return t.Principal, t.Expires, err
}

// watchFile reloads f while frontdoor runs and counts what it sees as
// ferry.frontdoor.<name>.reloads (result ok|invalid), for operators.
func watchFile[T any](app *runtime.App, f *reload.File[T], name string, interval time.Duration) error {
	reloads, err := app.Telemetry.MeterProvider.Meter("github.com/ferrygw/ferry/frontdoor/gateway").Int64Counter(
		"ferry.frontdoor."+name+".reloads", metric.WithUnit("{reload}"),
		metric.WithDescription("Changes of the "+name+" file, by result: ok (in force) or invalid (the previous one stays)"))
	if err != nil {
		return err
	}
	f.OnReload(func(ok bool) {
		result := "ok"
		if !ok {
			result = "invalid"
		}
		reloads.Add(context.Background(), 1, metric.WithAttributes(attribute.String("result", result)))
	})
	var stop context.CancelFunc
	done := make(chan struct{})
	app.Add(runtime.ComponentFuncs{
		ComponentName: name + "-watch",
		StartFunc: func(context.Context, runtime.Host) error {
			var ctx context.Context
			ctx, stop = context.WithCancel(context.Background())
			go func() {
				defer close(done)
				f.Watch(ctx, interval)
			}()
			return nil
		},
		ShutdownFunc: func(context.Context) error {
			stop()
			<-done
			return nil
		},
	})
	return nil
}
