package runtime

import (
	"fmt"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// roundRobinConfig spreads RPCs over every address of a list target, e.g.
// several transcodesvc replicas.
const roundRobinConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

var resolverSeq atomic.Uint64

// Dial creates a client connection to the internal Ferry service named
// peer ("appendsvc", ...). target is host:port, a comma-separated list of
// host:port (load-balanced round robin over all of them), or any gRPC
// target URI (dns:///name:port). The connection is protected by sec: with
// mutual TLS the server must present a certificate from the internal CA
// that names peer, whatever address it was reached at. It is traced with
// otelgrpc using tel's providers and W3C tracecontext+baggage, and kept
// alive with pings so a dead peer is noticed. Like grpc.NewClient it does
// not connect until first use.
func Dial(target, peer string, tel *Telemetry, sec *TransportSecurity, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	if sec == nil {
		return nil, fmt.Errorf("dial %s at %q: no transport security (use runtime.Plaintext() explicitly)", peer, target)
	}
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(sec.ClientCredentials(peer)),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider),
			otelgrpc.WithMeterProvider(tel.MeterProvider),
			otelgrpc.WithPropagators(tel.Propagator),
		)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: clientKeepaliveTime, Timeout: clientKeepaliveTimeout, PermitWithoutStream: true,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize),
			grpc.ForceCodecV2(codec{})),
		grpc.WithInitialWindowSize(streamWindow),
		grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithReadBufferSize(transportBuffer),
		grpc.WithWriteBufferSize(transportBuffer),
	}
	addrs := SplitList(target)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("dial: empty target")
	}
	if !strings.Contains(target, "://") {
		// A plain host:port list gets a static resolver: no DNS lookups of
		// literal addresses, and round robin over all of them.
		for _, a := range addrs {
			if err := DialAddr(a); err != nil {
				return nil, fmt.Errorf("dial %q: %s: %w", target, a, err)
			}
		}
		state := resolver.State{}
		for _, a := range addrs {
			state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
		}
		r := manual.NewBuilderWithScheme(fmt.Sprintf("ferry-static-%d", resolverSeq.Add(1)))
		r.InitialState(state)
		base = append(base, grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(roundRobinConfig))
		target = r.Scheme() + ":///" + strings.Join(addrs, ",")
	}
	conn, err := grpc.NewClient(target, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %q: %w", target, err)
	}
	return conn, nil
}
