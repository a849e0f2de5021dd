package broker

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// envRequireClients=1 (set by tools/test.sh, so in CI) makes a missing real client a failure:
// test.sh installs every client, so there a skip could only hide a broken install or runner.
const envRequireClients = "FERRY_TEST_REQUIRE_CLIENTS"

// missingClient fails the test under FERRY_TEST_REQUIRE_CLIENTS=1 and skips it otherwise (a
// run by hand on a machine without tools/install-clients.sh).
func missingClient(t *testing.T, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if os.Getenv(envRequireClients) == "1" {
		t.Fatalf("%s, and %s=1", what, envRequireClients)
	}
	t.Skipf("%s (tools/install-clients.sh)", what)
}

// kcatPath is the kcat executable (librdkafka's command-line producer).
func kcatPath(t *testing.T) string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		missingClient(t, "kcat not installed")
	}
	return kcat
}

// javaClients is the Java kafka-clients classpath (FERRY_TEST_KAFKA_CLIENTS_CP: kafka-clients
// and its compression libraries) and the javac and java executables.
func javaClients(t *testing.T) (cp, javac, java string) {
	t.Helper()
	cp = os.Getenv("FERRY_TEST_KAFKA_CLIENTS_CP")
	javac, err1 := exec.LookPath("javac")
	java, err2 := exec.LookPath("java")
	if cp == "" || err1 != nil || err2 != nil {
		missingClient(t, "FERRY_TEST_KAFKA_CLIENTS_CP, javac or java missing")
	}
	return cp, javac, java
}
