package suite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// kafkaTool runs one of Kafka's command classes (the 4.4 tools jars, .cache/bench/kafka-tools-lib)
// against frontdoor and returns its combined output and error. Missing jars fail the test when the
// suite must run everything, and skip it otherwise.
func kafkaTool(t *testing.T, class string, args ...string) (string, error) {
	t.Helper()
	root, err := stack.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "bench", "kafka-tools-lib")
	if _, err := os.Stat(lib); err != nil {
		if os.Getenv(testenv.EnvRequireFluss) == "1" {
			t.Fatalf("kafka tools not installed (tools/install-clients.sh): %v", err)
		}
		t.Skipf("kafka tools not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", append([]string{"-cp", filepath.Join(lib, "*"), "org.apache.kafka.tools." + class}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", class, strings.Join(args, " "), out)
	return string(out), err
}

// TestKafkaToolsRefuseDDL: kafka-topics --create/--delete/--alter and kafka-configs --alter fail
// with Ferry's message (POLICY_VIOLATION, naming Fluss DDL and the docs page) instead of a
// dropped connection or a timeout, and the table is left as it was.
func TestKafkaToolsRefuseDDL(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "admin")
	topic := topicTable(t, f, db, "ddl", 2, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	const want = "Ferry does not"
	for _, c := range []struct {
		class string
		args  []string
		msg   string
	}{
		{"TopicCommand", []string{"--create", "--topic", db + ".fresh", "--partitions", "3"}, "create topics"},
		{"TopicCommand", []string{"--delete", "--topic", topic}, "delete topics"},
		{"TopicCommand", []string{"--alter", "--topic", topic, "--partitions", "4"}, "add partitions"},
		{"ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=1000"}, "change topic configs"},
		{"ConfigCommand", []string{"--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.cleaner.threads=2"}, "configuration.md"},
	} {
		out, err := kafkaTool(t, c.class, append([]string{"--bootstrap-server", e.kafka}, c.args...)...)
		if err == nil {
			t.Errorf("%s %v succeeded, want a refusal", c.class, c.args)
		}
		if !strings.Contains(out, want) || !strings.Contains(out, c.msg) || !strings.Contains(out, "(see docs/") {
			t.Errorf("%s %v: output does not carry Ferry's refusal (%q, %q, the docs page)", c.class, c.args, want, c.msg)
		}
	}
	// Nothing changed: the topic still has its two partitions.
	waitTopic(t, topic, 2)
}
