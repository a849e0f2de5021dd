package runtime

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ListenAddr validates an address to listen on: host:port where the host may
// be empty (all interfaces) and port 0 asks the kernel for a free port.
func ListenAddr(v string) error { return checkHostPort(v, true) }

// DialAddr validates an address to connect to: host:port with a non-empty
// host and a port in 1..65535.
func DialAddr(v string) error { return checkHostPort(v, false) }

// OptionalListenAddr is ListenAddr that also accepts the empty string (feature off).
func OptionalListenAddr(v string) error {
	if v == "" {
		return nil
	}
	return ListenAddr(v)
}

// OptionalDialAddr is DialAddr that also accepts the empty string (feature off).
func OptionalDialAddr(v string) error {
	if v == "" {
		return nil
	}
	return DialAddr(v)
}

// DialAddrList validates a comma-separated, non-empty list of dial addresses.
func DialAddrList(v string) error {
	addrs := SplitList(v)
	if len(addrs) == 0 {
		return errors.New("required, want host:port[,host:port...]")
	}
	for _, a := range addrs {
		if err := DialAddr(a); err != nil {
			if len(addrs) == 1 {
				return err
			}
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// OptionalDialAddrList is DialAddrList that also accepts the empty string.
func OptionalDialAddrList(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return DialAddrList(v)
}

// SplitList splits a comma-separated list, trimming blanks and dropping
// empty items, so "a:1, b:2," is two addresses.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// OneOf returns a validator accepting exactly the given values.
func OneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, "|"))
	}
}

// PositiveDuration rejects zero and negative durations.
func PositiveDuration(d time.Duration) error {
	if d <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

// checkHostPort gives short reasons ("missing port") instead of net's
// "address x: missing port in address", because the caller already prints
// the value and the setting name.
func checkHostPort(v string, listen bool) error {
	if v == "" {
		return errors.New("empty (want host:port)")
	}
	if strings.Contains(v, "://") {
		return errors.New("want host:port without a scheme")
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return errors.New(strings.TrimSuffix(ae.Err, " in address"))
		}
		return err
	}
	if !listen && host == "" {
		return errors.New("missing host")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("invalid host %q", host)
	}
	if port == "" {
		return errors.New("missing port")
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("invalid port %q", port)
	}
	min := 1
	if listen {
		min = 0
	}
	if n < min || n > 65535 {
		return fmt.Errorf("port %d out of range %d..65535", n, min)
	}
	return nil
}
