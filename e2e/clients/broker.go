package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Broker is a real Apache Kafka broker (KRaft) run by e2e/kafkabroker/kafka-broker.sh.
type Broker struct {
	Dir       string
	Bootstrap string // PLAINTEXT listener
	SASL      string // SASL_PLAINTEXT (PLAIN) listener, when started with SASL
	SASLUser  string
	SASLPass  string
	script    string
}

// ErrBrokerNotInstalled means the Kafka jars are not in .cache/kafkabroker/lib.
var ErrBrokerNotInstalled = errors.New("kafka broker jars not installed (run tools/install-clients.sh)")

// RepoRoot is the repository root (two levels above this package).
func RepoRoot() string { return filepath.Clean(filepath.Join(Dir(), "..", "..")) }

// BrokerInstalled reports whether the broker jars are present.
func BrokerInstalled() bool {
	lib := os.Getenv("KAFKA_BROKER_LIB")
	if lib == "" {
		lib = filepath.Join(RepoRoot(), ".cache", "kafkabroker", "lib")
	}
	m, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar"))
	return len(m) > 0
}

// StartBroker formats and starts a one-node broker in dir on free loopback ports (plus a SASL/PLAIN
// listener when withSASL), waiting until it serves. Stop it with Stop.
func StartBroker(ctx context.Context, dir string, withSASL bool) (*Broker, error) {
	if !BrokerInstalled() {
		return nil, ErrBrokerNotInstalled
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	b := &Broker{Dir: dir, Bootstrap: "127.0.0.1:" + strconv.Itoa(ports[0]),
		script: filepath.Join(RepoRoot(), "e2e", "kafkabroker", "kafka-broker.sh")}
	args := []string{"start", "--dir", dir, "--port", strconv.Itoa(ports[0]), "--controller-port", strconv.Itoa(ports[1]),
		"--partitions", "3", "--wait", "120"}
	if withSASL {
		b.SASL, b.SASLUser, b.SASLPass = "127.0.0.1:"+strconv.Itoa(ports[2]), "ferry", "ferry-secret"
		args = append(args, "--sasl-port", strconv.Itoa(ports[2]), "--sasl-user", b.SASLUser, "--sasl-password", b.SASLPass)
	}
	ctx, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.script, args...).CombinedOutput()
	if err != nil {
		_ = b.Stop()
		return nil, fmt.Errorf("start kafka broker: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return b, nil
}

// Stop stops the broker (SIGTERM, SIGKILL after 30 s).
func (b *Broker) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.script, "stop", "--dir", b.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("stop kafka broker: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// freePorts reserves n distinct loopback ports by binding and releasing them.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
