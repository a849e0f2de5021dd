package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFakeServe is not a test: with FERRY_TESTENV_FAKE_SERVE set, the test binary plays
// `flusshelper serve` for the tests below. Commands: "echo" answers its arguments, "fail"
// exits 1 with a message, "crash" kills the process, "slow" answers after 300ms.
func TestFakeServe(t *testing.T) {
	if os.Getenv("FERRY_TESTENV_FAKE_SERVE") == "" {
		t.Skip("helper process for the serve tests")
	}
	if os.Args[len(os.Args)-1] != "serve" {
		fmt.Fprintln(os.Stderr, "fake: want serve as the last argument")
		os.Exit(2)
	}
	var mu sync.Mutex
	out := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	var wg sync.WaitGroup
	for sc.Scan() {
		var req serveRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			os.Exit(3)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := serveResponse{ID: req.ID}
			switch req.Args[0] {
			case "crash":
				fmt.Fprintln(os.Stderr, "fake: crashing as asked")
				os.Exit(9)
			case "fail":
				resp.Code, resp.Error = 1, "it failed"
			case "slow":
				time.Sleep(300 * time.Millisecond)
				resp.Stdout = "slow done"
			default:
				resp.Stdout = strings.Join(req.Args, " ") + "|" + req.Stdin
			}
			mu.Lock()
			_ = out.Encode(resp)
			mu.Unlock()
		}()
	}
	wg.Wait()
	os.Exit(0)
}

func fakeServeHelper(t *testing.T) *Helper {
	t.Helper()
	t.Setenv("FERRY_TESTENV_FAKE_SERVE", "1")
	// A distinct command line per test so each gets its own fake process.
	h, err := NewHelper(os.Args[0]+" -test.run=^TestFakeServe$ -test.count=1 fake-"+t.Name(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	h.PerCall = false
	return h
}

func TestServeConcurrentCalls(t *testing.T) {
	h := fakeServeHelper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := h.run(ctx, []byte(fmt.Sprint(i)), "echo", "--n", fmt.Sprint(i))
			want := fmt.Sprintf("echo --bootstrap 127.0.0.1:1 --n %d|%d", i, i)
			if err != nil || string(out) != want {
				errs <- fmt.Errorf("call %d = %q, %v; want %q", i, out, err, want)
			}
		}(i)
	}
	// A slow call must not hold up the others (requests run concurrently in the helper).
	slowDone := make(chan error, 1)
	go func() {
		out, err := h.run(ctx, nil, "slow")
		if err == nil && string(out) != "slow done" {
			err = fmt.Errorf("slow = %q", out)
		}
		slowDone <- err
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-slowDone; err != nil {
		t.Error(err)
	}

	_, err := h.run(ctx, nil, "fail")
	var he *HelperError
	if !errors.As(err, &he) || he.ExitCode != 1 || he.Message != "it failed" || he.Command != "fail" {
		t.Errorf("fail = %v, want HelperError{fail, 1, it failed}", err)
	}
}

func TestServeCrashAndRestart(t *testing.T) {
	h := fakeServeHelper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h.run(ctx, nil, "echo"); err != nil {
		t.Fatal(err)
	}
	_, err := h.run(ctx, nil, "crash")
	if err == nil || !strings.Contains(err.Error(), "crashing as asked") {
		t.Fatalf("crash = %v, want the process's last stderr line", err)
	}
	// The next call starts a fresh process.
	if out, err := h.run(ctx, nil, "echo"); err != nil || !strings.HasPrefix(string(out), "echo") {
		t.Fatalf("after restart: %q, %v", out, err)
	}
}

func TestServeContextCancel(t *testing.T) {
	h := fakeServeHelper(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.run(ctx, nil, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	// The late answer is dropped and the process stays usable.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if _, err := h.run(ctx2, nil, "echo"); err != nil {
		t.Fatal(err)
	}
}
