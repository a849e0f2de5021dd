package runtime

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

type fatalRecorder struct{ err error }

func (f *fatalRecorder) ReportFatal(err error) { f.err = err }

func TestPprofServerServesProfilesOnlyOnItsMux(t *testing.T) {
	ps, err := newPprofServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := &fatalRecorder{}
	if err := ps.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	base := "http://" + ps.lis.Addr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "mutex") {
		t.Fatalf("index: %d %.200q", code, body)
	}
	if code, _ := get("/debug/pprof/heap?debug=1"); code != http.StatusOK {
		t.Fatalf("heap: %d", code)
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics: %d, want 404", code)
	}
	if err := ps.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if host.err != nil {
		t.Fatal(host.err)
	}
}

func TestPprofAddrSetting(t *testing.T) {
	c := plainConfig("svc", "127.0.0.1:0")
	c.PprofAddr = "nonsense"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), EnvPprofAddr) {
		t.Fatalf("bad pprof address accepted: %v", err)
	}
	c.PprofAddr = ""
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
