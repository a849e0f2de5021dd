package dnsexpand

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

// fakeResolver answers from a table; a name missing from it fails.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, errors.New("lookup " + host + ": no such host")
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func TestExpand(t *testing.T) {
	res := fakeResolver{
		"transcodesvc": {"172.18.0.7", "172.18.0.5", "172.18.0.7"},
		"v6":           {"fd00::2"},
		"empty":        {},
	}
	e := New([]string{"transcodesvc:7102", "10.0.0.1:7102", "v6:7102", "172.18.0.5:7102"}, res)
	got, errs := e.Expand(context.Background())
	want := []string{"172.18.0.5:7102", "172.18.0.7:7102", "10.0.0.1:7102", "[fd00::2]:7102"}
	if !slices.Equal(got, want) || len(errs) != 0 {
		t.Fatalf("Expand = %v, %v; want %v, no errors", got, errs, want)
	}

	// Scaled down to one instance.
	res["transcodesvc"] = []string{"172.18.0.9"}
	got, _ = e.Expand(context.Background())
	if want := []string{"172.18.0.9:7102", "10.0.0.1:7102", "[fd00::2]:7102", "172.18.0.5:7102"}; !slices.Equal(got, want) {
		t.Fatalf("after scaling down: %v, want %v", got, want)
	}

	// DNS failing or answering nothing keeps the last good answer.
	delete(res, "transcodesvc")
	res["v6"] = nil
	got, errs = e.Expand(context.Background())
	if want := []string{"172.18.0.9:7102", "10.0.0.1:7102", "[fd00::2]:7102", "172.18.0.5:7102"}; !slices.Equal(got, want) || len(errs) != 2 {
		t.Fatalf("with DNS failing: %v, %v; want %v and 2 errors", got, errs, want)
	}
}

// TestExpandUnresolvedName: a name that never resolved stays as it is, for
// gRPC to resolve when it dials.
func TestExpandUnresolvedName(t *testing.T) {
	e := New([]string{"later:7102"}, fakeResolver{})
	got, errs := e.Expand(context.Background())
	if !slices.Equal(got, []string{"later:7102"}) || len(errs) != 1 {
		t.Fatalf("Expand = %v, %v", got, errs)
	}
}
