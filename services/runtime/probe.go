package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// FlagHealthProbe turns a service binary into its own health probe: it
// checks the gRPC health of the instance configured by the same settings and
// exits 0 when SERVING. Container images then need no extra probe binary
// (HEALTHCHECK CMD ["/catalogsvc", "-health-probe"]).
const FlagHealthProbe = "health-probe"

// probeTimeout bounds one probe; orchestrators run probes often and a hung
// probe is worse than a failed one.
const probeTimeout = 5 * time.Second

// ProbeHealth asks the gRPC health service of the service named service at
// listen (a listen address: an empty or unspecified host means this
// machine) for the overall status. With mutual TLS the probe presents the
// service's own certificate, so it passes the same check as any caller.
func ProbeHealth(ctx context.Context, service, listen string, tel *Telemetry, sec *TransportSecurity) error {
	target, err := probeTarget(listen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := Dial(target, service, tel, sec)
	if err != nil {
		return err
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health check %s: %w", target, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("health check %s: %s", target, resp.GetStatus())
	}
	return nil
}

func probeTarget(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	if port == "0" {
		return "", errors.New("cannot probe a server listening on port 0: its port is unknown")
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port), nil
}
