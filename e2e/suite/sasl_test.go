package suite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/testenv"
)

// TestSASLPlain runs a second frontdoor with SASL/PLAIN (FERRY_SASL_USERS_FILE, hashes made by
// `frontdoor hash-password`) next to its own catalogsvc — a frontdoor registers itself as a
// broker, and sharing the main catalog would make it lead some of the main frontdoor's
// partitions — sharing the transcoders and the appender. The right password produces; a wrong
// one, a user whose allow-list lacks the topic and an unauthenticated client do not, and none
// of their records reaches Fluss.
func TestSASLPlain(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "sasl")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "who", Type: "STRING"}}
	topic := topicTable(t, f, db, "secured", 2, cols, nil)

	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users")
	users := hashPassword(t, "alice", "wonder-land") + "\n" +
		strings.TrimSpace(hashPassword(t, "bob", "builder")) + ":" + db + ".other\n"
	if err := os.WriteFile(usersFile, []byte("# e2e SASL users\n"+users), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := startSecuredFrontdoor(t, e, "sasl", map[string]string{"FERRY_SASL_USERS_FILE": usersFile})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	record := func(id int, who string) *kgo.Record {
		return &kgo.Record{Topic: topic, Partition: int32(id % 2), Value: []byte(`{"id": ` + strconv.Itoa(id) + `, "who": "` + who + `"}`)}
	}

	// Right password: acknowledged and in Fluss.
	alice := newKgo(t, kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "wonder-land"}.AsMechanism()))
	var acked []sent
	for i := 0; i < 4; i++ {
		res := alice.ProduceSync(ctx, record(i, "alice"))
		if err := res.FirstErr(); err != nil {
			t.Fatalf("alice with the right password: %v", err)
		}
		acked = append(acked, fromKgo(res[0].Record))
	}

	// Wrong password: the broker answers SASL_AUTHENTICATION_FAILED, and a produce never gets
	// through (franz-go keeps retrying the connection until its context ends).
	mallory := newKgo(t, kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "guess"}.AsMechanism()))
	reqCtx, reqCancel := context.WithTimeout(ctx, 15*time.Second)
	defer reqCancel()
	if _, err := mallory.Request(reqCtx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("wrong password: metadata request error %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	wrongCtx, wrongCancel := context.WithTimeout(ctx, 5*time.Second)
	defer wrongCancel()
	if err := mallory.ProduceSync(wrongCtx, record(100, "mallory")).FirstErr(); err == nil {
		t.Errorf("wrong password: produce succeeded")
	}

	// bob authenticates but may only write db.other.
	bob := newKgo(t, kafka, kgo.SASL(plain.Auth{User: "bob", Pass: "builder"}.AsMechanism()))
	bobCtx, bobCancel := context.WithTimeout(ctx, 20*time.Second)
	defer bobCancel()
	if err := bob.ProduceSync(bobCtx, record(200, "bob")).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("user without the topic in its allow-list: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// No authentication at all: a Produce request on a fresh connection gets no answer, the
	// connection is closed.
	if err := rawUnauthenticatedProduce(t, kafka, topic); err != nil {
		t.Error(err)
	}

	verifyRows(t, f, db, "secured", acked, func(s sent) map[string]any {
		id, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(string(s.Value), `{"id": `), `, "who": "alice"}`))
		return map[string]any{"id": num(int64(id)), "who": "alice"}
	})

	// Every real client authenticates with SASL/PLAIN and produces.
	for _, c := range selectedClients(t) {
		t.Run(c.Name, func(t *testing.T) {
			produceWithClient(t, f, db, c, clientRun{kafka: kafka, records: 12, saslUser: "alice", saslPass: "wonder-land",
				table: "sasl_" + sanitize(c.Name)})
		})
	}
}

// hashPassword runs `frontdoor hash-password` (the binary the stack built) and returns its
// users-file line.
func hashPassword(t *testing.T, user, password string) string {
	t.Helper()
	bin := filepath.Join(env.stack.Config().ServiceBinDir(), stack.Frontdoor)
	cmd := exec.Command(bin, "hash-password", "-user", user)
	cmd.Stdin = strings.NewReader(password + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("frontdoor hash-password: %v", err)
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, user+":$2") {
		t.Fatalf("frontdoor hash-password printed %q, want %s:<bcrypt hash>", line, user)
	}
	return line
}

// startSecuredFrontdoor starts catalogsvc-<name> and frontdoor-<name> (with env added to its own,
// and a metrics port) on free ports and returns that frontdoor's Kafka address. Both stop when
// the test ends.
func startSecuredFrontdoor(t *testing.T, e *suiteEnv, name string, env map[string]string) string {
	t.Helper()
	cat, ok := e.stack.Spec(stack.Catalog)
	fd, ok2 := e.stack.Spec(stack.Frontdoor)
	if !ok || !ok2 {
		t.Fatal("stack has no catalogsvc or frontdoor spec")
	}
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	host := e.stack.Config().Host
	addr := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }

	catSpec := cloneSpec(cat, "catalogsvc-"+name, map[string]int{"grpc": ports[0]})
	catSpec.Env["FERRY_LISTEN"] = addr(ports[0])
	fdSpec := cloneSpec(fd, "frontdoor-"+name, map[string]int{"grpc": ports[1], "kafka": ports[2], "metrics": ports[3]})
	fdSpec.Env["FERRY_LISTEN"] = addr(ports[1])
	fdSpec.Env["FERRY_KAFKA_LISTEN"] = addr(ports[2])
	fdSpec.Env["FERRY_ADVERTISED_ADDR"] = addr(ports[2])
	fdSpec.Env["FERRY_CATALOG_ADDR"] = addr(ports[0])
	for k, v := range env {
		fdSpec.Env[k] = v
	}

	startServices(t, e, catSpec, fdSpec)
	return addr(ports[2])
}

// startServices starts extra service processes in the suite's stack, in order, and stops them
// when the test ends.
func startServices(t *testing.T, e *suiteEnv, specs ...stack.ServiceSpec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, spec := range specs {
		if err := e.stack.StartService(ctx, spec); err != nil {
			t.Fatalf("start %s: %v", spec.Name, err)
		}
		name := spec.Name
		t.Cleanup(func() {
			if err := e.stack.StopService(name); err != nil {
				t.Errorf("stop %s: %v", name, err)
			}
		})
	}
}

func cloneSpec(s stack.ServiceSpec, name string, ports map[string]int) stack.ServiceSpec {
	c := s
	c.Name = name
	c.Ports = ports
	c.GRPCAddr = ""
	c.Env = map[string]string{}
	for k, v := range s.Env {
		c.Env[k] = v
	}
	// The original serves metrics on its own port; the clone only if given one.
	delete(c.Env, "FERRY_METRICS_ADDR")
	if p, ok := ports["metrics"]; ok {
		host, _, _ := net.SplitHostPort(s.GRPCAddr)
		c.Env["FERRY_METRICS_ADDR"] = net.JoinHostPort(host, strconv.Itoa(p))
	}
	if p, ok := ports["grpc"]; ok {
		host, _, _ := net.SplitHostPort(s.GRPCAddr)
		c.GRPCAddr = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return c
}

// rawUnauthenticatedProduce sends a Produce request as the first request of a connection to a
// SASL listener and expects the connection to be closed without an answer.
func rawUnauthenticatedProduce(t *testing.T, addr, topic string) error {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = encodeBatch(time.Now(), [][]byte{[]byte(`{"id": 300, "who": "anonymous"}`)})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	// Request header v2 (flexible): api key, version, correlation id, client id, no tags.
	var body []byte
	body = binary.BigEndian.AppendUint16(body, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 1)
	body = binary.BigEndian.AppendUint16(body, uint16(len("anon")))
	body = append(body, "anon"...)
	body = append(body, 0)
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return err
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf bytes.Buffer
	n, err := io.Copy(&buf, conn)
	switch {
	case n > 0:
		return errors.New("unauthenticated produce: got an answer, want the connection closed")
	case err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err):
		return err // includes the read deadline: the connection stayed open
	}
	return nil
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}
