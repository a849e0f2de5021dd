package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/ferrygw/ferry/services/testenv"
)

// TestTopicACLs runs a SASL frontdoor with an ACL file (FERRY_ACL_FILE) and changes the file
// while it runs: a WRITE the rules allow lands in Fluss, the same WRITE after the file denied it
// gets TOPIC_AUTHORIZATION_FAILED and writes nothing, a principal without DESCRIBE does not see
// the topic, a broken file keeps the rules in force, and the metrics count all of it.
func TestTopicACLs(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "acl")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}}
	topic := topicTable(t, f, db, "guarded", 1, cols, nil)

	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users")
	users := hashPassword(t, "alice", "a-pw") + "\n" + hashPassword(t, "bob", "b-pw") + "\n"
	if err := os.WriteFile(usersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	aclFile := filepath.Join(dir, "acl")
	writeACL := func(rules string) {
		t.Helper()
		// Write and rename, as an editor or a Kubernetes secret update does.
		tmp := aclFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, aclFile); err != nil {
			t.Fatal(err)
		}
	}
	writeACL("allow User:alice WRITE topic:" + db + ".*\n")
	kafka := startSecuredFrontdoor(t, e, "acl", map[string]string{"FERRY_SASL_USERS_FILE": usersFile,
		"FERRY_ACL_FILE": aclFile, "FERRY_ACL_RELOAD_INTERVAL": "200ms"})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	record := func(id int) *kgo.Record {
		return &kgo.Record{Topic: topic, Value: []byte(`{"id": ` + strconv.Itoa(id) + `}`)}
	}
	alice := newKgo(t, kafka, kgo.SASL(plain.Auth{User: "alice", Pass: "a-pw"}.AsMechanism()))
	acked := kgoProduce(t, alice, []*kgo.Record{record(1), record(2), record(3)}, 3)

	// bob may do nothing: the topic is refused by name and absent from the full list.
	bobAuth := kgo.SASL(plain.Auth{User: "bob", Pass: "b-pw"}.AsMechanism())
	bob := kadm.NewClient(newKgo(t, kafka, bobAuth))
	md, err := bob.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, seen := md.Topics[topic]; seen {
		t.Errorf("bob, without DESCRIBE, sees %s", topic)
	}
	// kadm turns a topic's TOPIC_AUTHORIZATION_FAILED into the call's error.
	md, err = bob.Metadata(ctx, topic)
	if err == nil {
		err = md.Topics[topic].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob's metadata for %s: %v, want TOPIC_AUTHORIZATION_FAILED", topic, err)
	}

	// The file changes: alice keeps DESCRIBE but loses WRITE on this table.
	writeACL("allow User:alice ALL topic:" + db + ".*\ndeny User:alice WRITE topic:" + topic + "\n")
	deadline := time.Now().Add(20 * time.Second)
	for {
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		err := alice.ProduceSync(pctx, record(100)).FirstErr()
		pcancel()
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			break
		}
		if err != nil {
			t.Fatalf("produce while the ACLs change: %v", err)
		}
		acked = append(acked, sent{}) // written before the new rules were in force
		if time.Now().After(deadline) {
			t.Fatal("the denying ACL file was not in force after 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A broken file is logged and ignored: WRITE stays denied.
	writeACL("allow User:alice WRITE nonsense\n")
	time.Sleep(time.Second)
	pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
	err = alice.ProduceSync(pctx, record(101)).FirstErr()
	pcancel()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("after a broken ACL file: %v, want the previous rules (TOPIC_AUTHORIZATION_FAILED)", err)
	}

	page, err := scrape(e.stack, "frontdoor-acl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"ferry_frontdoor_authorization_denied_total", map[string]string{"operation": "WRITE"}},
		{"ferry_frontdoor_authorization_denied_total", map[string]string{"operation": "DESCRIBE"}},
		{"ferry_frontdoor_acl_reloads_total", map[string]string{"result": "ok"}},
		{"ferry_frontdoor_acl_reloads_total", map[string]string{"result": "invalid"}},
	} {
		if v, _ := page.sum(c.name, c.labels); v < 1 {
			t.Errorf("frontdoor-acl: %s%v = %v, want at least 1", c.name, c.labels, v)
		}
	}

	// Fluss holds exactly what was acknowledged: none of the refused writes.
	rows := f.Scan(t, db, "guarded", testenv.ScanOptions{Expect: len(acked), Timeout: 60 * time.Second})
	if len(rows) != len(acked) {
		t.Fatalf("Fluss holds %d rows, %d were acknowledged", len(rows), len(acked))
	}
}

// TestConsumerACLs: reading needs READ on the topic and joining a group READ on the group; a
// principal without them gets TOPIC_AUTHORIZATION_FAILED / GROUP_AUTHORIZATION_FAILED, and one
// with them consumes, alone and in a group.
func TestConsumerACLs(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "acl")
	topic := topicTable(t, f, db, "readable", 1, []testenv.Column{{Name: "id", Type: "BIGINT"}}, nil)
	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users")
	users := hashPassword(t, "alice", "a-pw") + "\n" + hashPassword(t, "bob", "b-pw") + "\n"
	if err := os.WriteFile(usersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	aclFile := filepath.Join(dir, "acl")
	rules := "allow User:alice READ topic:" + topic + "\nallow User:alice READ group:ok-*\nallow User:bob DESCRIBE topic:" + topic + "\n"
	if err := os.WriteFile(aclFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	kafka := startSecuredFrontdoor(t, e, "consumeracl", map[string]string{"FERRY_SASL_USERS_FILE": usersFile, "FERRY_ACL_FILE": aclFile})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(`{"id": ` + strconv.Itoa(i) + `}`)})
	}
	kgoProduce(t, newKgo(t, e.kafka), recs, 10)

	alice := kgo.SASL(plain.Auth{User: "alice", Pass: "a-pw"}.AsMechanism())
	if got := consumeAll(t, kafka, topic, 10, alice); len(got) != 10 {
		t.Fatalf("alice consumed %d records, want 10", len(got))
	}
	g := newGroupConsumer(t, kafka, "ok-1", topic, alice)
	g.poll(t, 5*time.Second)
	g.cl.Close()
	if len(g.seen) != 10 {
		t.Errorf("alice's group consumer read %d records, want 10", len(g.seen))
	}

	bob := newKgo(t, kafka, kgo.SASL(plain.Auth{User: "bob", Pass: "b-pw"}.AsMechanism()))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch = 12, -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := fetch.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's fetch: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	aliceCl := newKgo(t, kafka, alice)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = 9, "other", 10000, 10000, "consumer"
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name = "range"
	join.Protocols = append(join.Protocols, jp)
	// franz-go asks FindCoordinator first, which refuses the group already.
	jresp, err := join.RequestWith(ctx, aliceCl)
	if err == nil {
		err = kerr.ErrorForCode(jresp.ErrorCode)
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("alice joining a group she may not read: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
}
