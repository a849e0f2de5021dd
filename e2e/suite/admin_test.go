package suite

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/e2e/stack"
	"github.com/ferrygw/ferry/services/fluss"
	"github.com/ferrygw/ferry/services/testenv"
)

// kafkaToolsLib is the directory of Kafka's 4.4 tools jars (tools/install-clients.sh). Missing
// jars fail the test when the suite must run everything, and skip it otherwise.
func kafkaToolsLib(t *testing.T) string {
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
	return lib
}

// kafkaTool runs one of Kafka's command classes (the 4.4 tools jars, .cache/bench/kafka-tools-lib)
// against frontdoor and returns its combined output and error. Missing jars fail the test when the
// suite must run everything, and skip it otherwise.
func kafkaTool(t *testing.T, class string, args ...string) (string, error) {
	t.Helper()
	lib := kafkaToolsLib(t)
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

// configLines parses kafka-configs --describe output: "  name=value sensitive=... synonyms={...}".
func configLines(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, "=")
		if !ok || strings.Contains(name, " ") {
			continue
		}
		value, _, _ := strings.Cut(rest, " sensitive=")
		got[name] = value
	}
	return got
}

// TestKafkaToolsDescribe: kafka-topics --list/--describe and kafka-configs --describe print what
// Fluss holds: the tables as topics with their buckets as partitions (leaders and replicas as
// Metadata has them), configs derived from the tables' kind and properties, frontdoor's settings
// as broker configs; properties altered in place in Fluss show their new values, and a table
// created again with another TTL (Fluss does not alter table.log.ttl) shows the new retention.ms.
func TestKafkaToolsDescribe(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "admin")
	cols := []testenv.Column{{Name: "id", Type: "BIGINT", Nullable: testenv.NotNull()}, {Name: "v", Type: "STRING"}}
	create := func(table string, buckets int, pk []string, props map[string]string) (string, testenv.TableInfo) {
		info := f.NewTable(t, testenv.TableSpec{Database: db, Table: table, Columns: cols, BucketCount: buckets, PrimaryKey: pk,
			Properties: props, CustomProperties: map[string]string{"kafka.enabled": "true", "owner": "ops"}})
		topic := db + "." + table
		waitTopic(t, topic, buckets)
		return topic, info
	}
	events, eventsInfo := create("events", 3, nil, map[string]string{"table.log.ttl": "2 h"})
	users, _ := create("users", 2, []string{"id"}, nil)
	bootstrap := []string{"--bootstrap-server", e.kafka}

	out, err := kafkaTool(t, "TopicCommand", append(bootstrap, "--list")...)
	if err != nil {
		t.Fatalf("kafka-topics --list: %v", err)
	}
	listed := strings.Fields(out)
	if !slices.Contains(listed, events) || !slices.Contains(listed, users) {
		t.Errorf("kafka-topics --list does not list %s and %s", events, users)
	}

	// kafka-topics --describe against Metadata.
	cl := newKgo(t, e.kafka)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(events)
	md.Topics = append(md.Topics, mt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mdResp.Topics) != 1 {
		t.Fatalf("metadata: %v %+v", err, mdResp)
	}
	want := map[int32]string{}
	for _, p := range mdResp.Topics[0].Partitions {
		want[p.Partition] = fmt.Sprintf("Leader: %d Replicas: %s Isr: %s", p.Leader, joinIDs(p.Replicas), joinIDs(p.ISR))
	}
	out, err = kafkaTool(t, "TopicCommand", append(bootstrap, "--describe", "--topic", events)...)
	if err != nil {
		t.Fatalf("kafka-topics --describe: %v", err)
	}
	partLine := regexp.MustCompile(`Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\S+)\s+Replicas: (\S+)\s+Isr: (\S+)`)
	head := regexp.MustCompile(`Topic: (\S+)\s+TopicId: (\S+)\s+PartitionCount: (\d+)\s+ReplicationFactor: (\d+)\s+Configs: (\S*)`)
	h := head.FindStringSubmatch(out)
	if h == nil || h[1] != events || h[3] != strconv.Itoa(int(eventsInfo.BucketCount)) {
		t.Errorf("kafka-topics --describe header %q, want %s with %d partitions", h, events, eventsInfo.BucketCount)
	} else {
		if !strings.Contains(h[5], "cleanup.policy=delete") || !strings.Contains(h[5], "retention.ms=7200000") {
			t.Errorf("kafka-topics --describe configs %q, want cleanup.policy=delete and retention.ms=7200000", h[5])
		}
		if rf := eventsInfo.Properties["table.replication.factor"]; rf != "" && h[4] != rf {
			t.Errorf("ReplicationFactor %s, Fluss table.replication.factor %s", h[4], rf)
		}
	}
	seen := 0
	for _, m := range partLine.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[2])
		if got := fmt.Sprintf("Leader: %s Replicas: %s Isr: %s", m[3], m[4], m[5]); got != want[int32(p)] {
			t.Errorf("partition %d: %q, Metadata says %q", p, got, want[int32(p)])
		}
		seen++
	}
	if seen != int(eventsInfo.BucketCount) {
		t.Errorf("kafka-topics --describe listed %d partitions, want %d", seen, eventsInfo.BucketCount)
	}

	// kafka-configs --describe, topics.
	describe := func(entity, name string, extra ...string) map[string]string {
		t.Helper()
		out, err := kafkaTool(t, "ConfigCommand", append(append(bootstrap, "--describe", "--entity-type", entity, "--entity-name", name), extra...)...)
		if err != nil {
			t.Fatalf("kafka-configs --describe %s %s: %v", entity, name, err)
		}
		return configLines(out)
	}
	checkConfigs := func(what string, got, want map[string]string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", what, k, got[k], v)
			}
		}
	}
	evCfg := describe("topics", events)
	checkConfigs(events, evCfg, map[string]string{"cleanup.policy": "delete", "retention.ms": "7200000"})
	// Every property Fluss reports for the table (defaults it added included) under its own name.
	checkConfigs(events+" (Fluss properties)", evCfg, eventsInfo.Properties)
	checkConfigs(events+" (custom properties)", evCfg, eventsInfo.CustomProperties)
	checkConfigs(users, describe("topics", users), map[string]string{"cleanup.policy": "compact", "owner": "ops"})

	// kafka-configs --describe, this frontdoor as a broker (--all: its settings are static).
	checkConfigs("broker", describe("brokers", strconv.Itoa(int(e.nodeID)), "--all"), map[string]string{
		"node.id": strconv.Itoa(int(e.nodeID)), "auto.create.topics.enable": "false", "message.max.bytes": "1048588"})

	// waitConfigs polls DescribeConfigs until the topic's configs have the wanted values, as
	// they do once catalogsvc has read the changed table.
	waitConfigs := func(what string, want map[string]string) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(90 * time.Second)
		for {
			req := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, events
			for k := range want {
				res.ConfigNames = append(res.ConfigNames, k)
			}
			req.Resources = append(req.Resources, res)
			resp, err := req.RequestWith(ctx, cl)
			got := map[string]string{}
			if err == nil && len(resp.Resources) == 1 {
				for _, c := range resp.Resources[0].Configs {
					if c.Value != nil {
						got[c.Name] = *c.Value
					}
				}
			}
			if maps.Equal(got, want) {
				t.Logf("%s: DescribeConfigs shows %v after %v", what, want, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: DescribeConfigs says %v (err %v), want %v", what, got, err, want)
			}
			time.Sleep(time.Second)
		}
	}

	// Properties Fluss alters in place (a custom property, an alterable table option): the
	// table keeps its id, and DescribeConfigs follows once catalogsvc reads the table again.
	fc, err := fluss.Dial(ctx, f.Bootstrap)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	err = fc.AlterTable(ctx, fluss.TablePath{Database: db, Table: "events"},
		[]fluss.PropertyChange{{Key: "owner", Value: "data"}, {Key: "table.log.tiered.local-segments", Value: "4"}}, false)
	if err != nil {
		t.Fatalf("altering %s in Fluss: %v", events, err)
	}
	waitConfigs("after ALTER TABLE SET", map[string]string{"owner": "data", "table.log.tiered.local-segments": "4"})
	checkConfigs(events+" after ALTER TABLE SET", describe("topics", events),
		map[string]string{"owner": "data", "table.log.tiered.local-segments": "4", "retention.ms": "7200000"})

	// The table is created again with another TTL: retention.ms follows once catalogsvc sees it.
	if err := f.Helper.DropTable(ctx, db, "events"); err != nil {
		t.Fatal(err)
	}
	f.NewTable(t, testenv.TableSpec{Database: db, Table: "events", Columns: cols, BucketCount: 3,
		Properties: map[string]string{"table.log.ttl": "3 h"}, CustomProperties: map[string]string{"kafka.enabled": "true"}})
	waitConfigs("after the table was created again", map[string]string{"retention.ms": "10800000"})
	checkConfigs(events+" after the change", describe("topics", events), map[string]string{"retention.ms": "10800000", "table.log.ttl": "3 h"})
}

// containsRow reports whether a line of out starts with the fields of row.
func containsRow(out string, row []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= len(row) && slices.Equal(f[:len(row)], row) {
			return true
		}
	}
	return false
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// TestKafkaToolsOperate: kafka-broker-api-versions, kafka-log-dirs --describe, kafka-get-offsets and
// kafka-consumer-groups --list/--describe against the suite's frontdoor, and kafka-acls --list
// against one with an ACL file, print what frontdoor serves, the log dir standing for Fluss, the
// offsets Fluss holds, the group's committed offsets and the file's rules.
func TestKafkaToolsOperate(t *testing.T) {
	e, f := need(t)
	db := dbName(t, f, "admin")
	topic := topicTable(t, f, db, "offsets", 3, []testenv.Column{{Name: "v", Type: "STRING"}}, nil)
	bootstrap := []string{"--bootstrap-server", e.kafka}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// kafka-broker-api-versions: every API frontdoor lists, with its range.
	cl := newKgo(t, e.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out, err := kafkaTool(t, "BrokerApiVersionsCommand", bootstrap...)
	if err != nil {
		t.Fatalf("kafka-broker-api-versions: %v", err)
	}
	for _, k := range av.ApiKeys {
		line := fmt.Sprintf("(%d): %d to %d", k.ApiKey, k.MinVersion, k.MaxVersion)
		if k.MinVersion == k.MaxVersion {
			line = fmt.Sprintf("(%d): %d", k.ApiKey, k.MinVersion)
		}
		if !strings.Contains(out, line) {
			t.Errorf("kafka-broker-api-versions does not show %s%s", kmsg.NameForKey(k.ApiKey), line)
		}
	}
	if strings.Contains(out, "UNSUPPORTED") && !strings.Contains(out, "usable") {
		t.Errorf("kafka-broker-api-versions found no usable versions")
	}

	// kafka-log-dirs: frontdoor keeps no log; one dir stands for Fluss, without sizes.
	out, err = kafkaTool(t, "LogDirsCommand", append(bootstrap, "--describe")...)
	if err != nil {
		t.Fatalf("kafka-log-dirs: %v", err)
	}
	if want := fmt.Sprintf(`{"broker":%d,"logDirs":[{"partitions":[],"error":null,"logDir":"fluss"}]}`, e.nodeID); !strings.Contains(out, want) {
		t.Errorf("kafka-log-dirs does not print %s", want)
	}

	// kafka-get-offsets: the end offsets of what was produced, per partition.
	var recs []*kgo.Record
	for p, n := range []int{2, 0, 5} {
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(`{"v":"x"}`)})
		}
	}
	kgoProduce(t, cl, recs, len(recs))
	out, err = kafkaTool(t, "GetOffsetShell", append(bootstrap, "--topic", topic)...)
	if err != nil {
		t.Fatalf("kafka-get-offsets: %v", err)
	}
	for p, n := range []int{2, 0, 5} {
		if want := fmt.Sprintf("%s:%d:%d", topic, p, n); !slices.Contains(strings.Fields(out), want) {
			t.Errorf("kafka-get-offsets does not print %s", want)
		}
	}
	out, err = kafkaTool(t, "GetOffsetShell", append(bootstrap, "--topic", topic, "--time", "-2")...)
	if err != nil || !slices.Contains(strings.Fields(out), topic+":2:0") {
		t.Errorf("kafka-get-offsets --time -2: %v, want %s:2:0", err, topic)
	}

	// kafka-consumer-groups --list and --describe: a group that committed offsets through frontdoor.
	group := db + "-group"
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 2, At: 3})
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, group, offsets); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// --list shows the groups this frontdoor coordinates (kafka-api.md, ListGroups): one with a member.
	member := group + "-live"
	mc := newKgo(t, e.kafka, kgo.ConsumerGroup(member), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pollCtx, pollCancel := context.WithTimeout(ctx, 30*time.Second)
	for n := 0; n < 7 && pollCtx.Err() == nil; {
		n += mc.PollFetches(pollCtx).NumRecords()
	}
	pollCancel()
	out, err = kafkaTool(t, "consumer.group.ConsumerGroupCommand", append(bootstrap, "--list")...)
	if err != nil || !slices.Contains(strings.Fields(out), member) {
		t.Errorf("kafka-consumer-groups --list: %v, want %s listed", err, member)
	}
	out, err = kafkaTool(t, "consumer.group.ConsumerGroupCommand", append(bootstrap, "--describe", "--group", group)...)
	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
	if want := []string{group, topic, "2", "3", "5", "2"}; err != nil || !containsRow(out, want) {
		t.Errorf("kafka-consumer-groups --describe: %v, want a row starting %v", err, want)
	}

	// kafka-acls --list: the ACL file's rules as bindings.
	aclFile := filepath.Join(t.TempDir(), "acl")
	rules := "allow User:ANONYMOUS DESCRIBE cluster:kafka-cluster\nallow User:* ALL topic:" + db + ".*\ndeny User:mallory WRITE topic:" + topic + "\nallow User:etl READ group:etl-*\n"
	if err := os.WriteFile(aclFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	guarded := startSecuredFrontdoor(t, e, "acls", map[string]string{"FERRY_ACL_FILE": aclFile})
	out, err = kafkaTool(t, "AclCommand", "--bootstrap-server", guarded, "--list")
	if err != nil {
		t.Fatalf("kafka-acls --list: %v", err)
	}
	for _, want := range []string{
		"ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)",
		"(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW)",
		"ResourcePattern(resourceType=TOPIC, name=" + db + "., patternType=PREFIXED)",
		"(principal=User:*, host=*, operation=ALL, permissionType=ALLOW)",
		"ResourcePattern(resourceType=TOPIC, name=" + topic + ", patternType=LITERAL)",
		"(principal=User:mallory, host=*, operation=WRITE, permissionType=DENY)",
		"ResourcePattern(resourceType=GROUP, name=etl-, patternType=PREFIXED)",
		"(principal=User:etl, host=*, operation=READ, permissionType=ALLOW)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kafka-acls --list does not print %s", want)
		}
	}
}
