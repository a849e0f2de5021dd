package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka/txnapi"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/fakebackends"
	fetchv1 "github.com/ferrygw/ferry/services/api/gen/ferry/fetch/v1"
)

// txnShapeSeeds: one request per transaction API and version, with
// tags and nulls where versions allow them.
func txnShapeSeeds() []kmsg.Request {
	var out []kmsg.Request
	withTags := func(t *kmsg.Tags) { t.Set(7, []byte("x")) }
	for v := int16(txnapi.AddPartitionsToTxnMin); v <= txnapi.AddPartitionsToTxnMax; v++ {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch = v, "tx", 1, 2
		for _, n := range []string{"orders", "events"} {
			t := kmsg.NewAddPartitionsToTxnRequestTopic()
			t.Topic, t.Partitions = n, []int32{0, 1}
			withTags(&t.UnknownTags)
			r.Topics = append(r.Topics, t)
		}
		for _, id := range []string{"a", "b"} {
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, 1, 2, id == "b"
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = "orders", []int32{0, 3}
			withTags(&tt.UnknownTags)
			tx.Topics = append(tx.Topics, tt, tt)
			withTags(&tx.UnknownTags)
			r.Transactions = append(r.Transactions, tx)
		}
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(txnapi.AddOffsetsToTxnMin); v <= txnapi.AddOffsetsToTxnMax; v++ {
		r := kmsg.NewPtrAddOffsetsToTxnRequest()
		r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = v, "tx", 1, 2, "g"
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	for v := int16(txnapi.TxnOffsetCommitMin); v <= txnapi.TxnOffsetCommitMax; v++ {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.Version, r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch = v, "tx", "g", 1, 2
		r.Generation, r.MemberID = 3, "m"
		for _, n := range []string{"orders", "events"} {
			t := kmsg.NewTxnOffsetCommitRequestTopic()
			t.Topic = n
			for p := range int32(2) {
				tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				tp.Partition, tp.Offset = p, 10
				if p == 1 {
					tp.Metadata = kmsg.StringPtr("meta")
				}
				withTags(&tp.UnknownTags)
				t.Partitions = append(t.Partitions, tp)
			}
			out = append(out, r)
			r.Topics = append(r.Topics, t)
		}
		withTags(&r.UnknownTags)
	}
	for v := int16(txnapi.EndTxnMin); v <= txnapi.EndTxnMax; v++ {
		r := kmsg.NewPtrEndTxnRequest()
		r.Version, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = v, "tx", 1, 2, true
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{"a", "b"}
	withTags(&d.UnknownTags)
	out = append(out, d)
	for v := int16(txnapi.ListTransactionsMin); v <= txnapi.ListTransactionsMax; v++ {
		r := kmsg.NewPtrListTransactionsRequest()
		r.Version, r.StateFilters, r.ProducerIDFilters, r.DurationFilterMillis = v, []string{"Ongoing"}, []int64{1, 2}, 5
		if v >= 2 {
			r.TransactionalIDPattern = kmsg.StringPtr("tx-.*")
		}
		withTags(&r.UnknownTags)
		out = append(out, r)
	}
	return out
}

func txnHarness(t *testing.T) (*harness, *fakebackends.Offsets) {
	offs := fakebackends.NewOffsets()
	return newHarness(t, harnessOpts{offsets: offs}), offs
}

func txnClient(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(10 * time.Second),
		kgo.ProducerBatchCompression(kgo.NoCompression())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKgoTransactionsCommitAndAbort: franz-go's transactional producer
// writes nothing until EndTxn(commit), everything at it, and nothing of an
// aborted transaction.
func TestKgoTransactionsCommitAndAbort(t *testing.T) {
	h, _ := txnHarness(t)
	cl := txnClient(t, h.addr, "tx-commit")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(what string, n int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			r := &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", what, i))}
			if i%3 == 0 {
				r.Topic, r.Partition = "events", 1
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("%s: produce: %v", what, err)
			}
		}
	}
	stored := func() int { return len(h.ap.Log(100, 0)) + len(h.ap.Log(100, 1)) + len(h.ap.Log(200, 1)) }

	produce("committed", 9)
	if n := stored(); n != 0 {
		t.Fatalf("%d records stored before the commit", n)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if n := stored(); n != 9 {
		t.Fatalf("%d records stored after the commit, want 9", n)
	}
	produce("aborted", 6)
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	produce("second", 3)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	for _, b := range [][2]int64{{100, 0}, {100, 1}, {200, 1}} {
		for _, v := range h.ap.Log(b[0], int32(b[1])) {
			if len(v) >= 7 && v[:7] == "aborted" {
				t.Fatalf("aborted record %q stored in table %d bucket %d", v, b[0], b[1])
			}
		}
	}
	if n := stored(); n != 12 {
		t.Fatalf("%d records stored, want 12", n)
	}
}

// TestKgoTransactionFencing: a second producer with the same
// transactional id fences the first, whose open transaction is dropped.
func TestKgoTransactionFencing(t *testing.T) {
	h, _ := txnHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := txnClient(t, h.addr, "tx-fence")
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 3, Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	second := txnClient(t, h.addr, "tx-fence")
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 3, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	err := first.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer's commit: %v, want PRODUCER_FENCED", err)
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	if got := h.ap.Log(100, 3); len(got) != 1 || got[0] != "new" {
		t.Fatalf("stored %q, want only the new producer's record", got)
	}
}

// TestTxnOffsetCommitAppliesAtCommit: offsets sent in a transaction are
// the group's only once it commits, and never when it aborts.
func TestTxnOffsetCommitAppliesAtCommit(t *testing.T) {
	h, offs := txnHarness(t)
	c := dialRaw(t, h.addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr("tx-offsets"), 60000
	ir := c.roundTrip(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	committed := func() int64 {
		resp, err := offs.ListCommittedOffsets(context.Background(), &fetchv1.ListCommittedOffsetsRequest{Group: "g"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range resp.GetOffsets() {
			if o.GetTopic() == "orders" && o.GetPartition() == 0 {
				return o.GetOffset()
			}
		}
		return -1
	}
	round := func(offset int64, commit bool) {
		t.Helper()
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = 3, "tx-offsets", ir.ProducerID, ir.ProducerEpoch, "g"
		if e := c.roundTrip(add).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; e != 0 {
			t.Fatalf("add offsets: %v", kerr.ErrorForCode(e))
		}
		oc := kmsg.NewPtrTxnOffsetCommitRequest()
		oc.Version, oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = 3, "tx-offsets", "g", ir.ProducerID, ir.ProducerEpoch, -1
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset = 0, offset
		oc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{tp}}}
		if e := c.roundTrip(oc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; e != 0 {
			t.Fatalf("txn offset commit: %v", kerr.ErrorForCode(e))
		}
		if got := committed(); got == offset {
			t.Fatalf("offset %d is the group's before EndTxn", offset)
		}
		// KIP-447: a consumer asking for stable offsets waits for the
		// transaction; one that does not reads the offset before it.
		for _, stable := range []bool{true, false} {
			of := kmsg.NewPtrOffsetFetchRequest()
			of.Version, of.Group, of.RequireStable = 7, "g", stable
			of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
			p := c.roundTrip(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
			if stable && p.ErrorCode != kerr.UnstableOffsetCommit.Code || !stable && (p.ErrorCode != 0 || p.Offset == offset) {
				t.Fatalf("OffsetFetch require_stable=%v during the transaction: %v offset %d", stable, kerr.ErrorForCode(p.ErrorCode), p.Offset)
			}
		}
		end := kmsg.NewPtrEndTxnRequest()
		end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "tx-offsets", ir.ProducerID, ir.ProducerEpoch, commit
		if e := c.roundTrip(end).(*kmsg.EndTxnResponse).ErrorCode; e != 0 {
			t.Fatalf("end: %v", kerr.ErrorForCode(e))
		}
	}
	round(17, false)
	if got := committed(); got != -1 {
		t.Fatalf("aborted offsets committed: %d", got)
	}
	round(42, true)
	if got := committed(); got != 42 {
		t.Fatalf("committed offset %d, want 42", got)
	}

	// The admin views see the transactional id.
	lr := c.roundTrip(kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
	if len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "tx-offsets" || lr.TransactionStates[0].TransactionState != "CompleteCommit" {
		t.Fatalf("ListTransactions: %+v", lr.TransactionStates)
	}
	for pattern, want := range map[string]int{"tx-off.*": 1, "tx-off": 0, "other.*": 0} {
		lp := kmsg.NewPtrListTransactionsRequest()
		lp.Version, lp.TransactionalIDPattern = 2, kmsg.StringPtr(pattern)
		if got := c.roundTrip(lp).(*kmsg.ListTransactionsResponse); got.ErrorCode != 0 || len(got.TransactionStates) != want {
			t.Fatalf("ListTransactions pattern %q: %+v, want %d", pattern, got, want)
		}
	}
	bad := kmsg.NewPtrListTransactionsRequest()
	bad.Version, bad.TransactionalIDPattern = 2, kmsg.StringPtr("(")
	if got := c.roundTrip(bad).(*kmsg.ListTransactionsResponse); got.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("ListTransactions with a bad pattern: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	dr := kmsg.NewPtrDescribeTransactionsRequest()
	dr.TransactionalIDs = []string{"tx-offsets", "unknown"}
	d := c.roundTrip(dr).(*kmsg.DescribeTransactionsResponse)
	if d.TransactionStates[0].ProducerID != ir.ProducerID || d.TransactionStates[0].State != "CompleteCommit" ||
		d.TransactionStates[1].ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("DescribeTransactions: %+v", d.TransactionStates)
	}
}

// TestTransactionalProduceRules: a transactional batch without the
// partition added is INVALID_TXN_STATE, and a batch whose transactional bit
// does not match the request is refused.
func TestTransactionalProduceRules(t *testing.T) {
	h, _ := txnHarness(t)
	c := dialRaw(t, h.addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr("tx-rules"), 60000
	ir := c.roundTrip(init).(*kmsg.InitProducerIDResponse)
	txnBatch := func(attrs int16) []byte {
		b := batchWith([]string{"x"}, ir.ProducerID, attrs)
		return b
	}
	send := func(txnID *string, records []byte) kmsg.ProduceResponseTopicPartition {
		req := produceReq(9, -1, "orders", 0, records)
		req.TransactionID = txnID
		return c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	if p := send(kmsg.StringPtr("tx-rules"), txnBatch(0x10)); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("partition not added: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := send(kmsg.StringPtr("tx-rules"), txnBatch(0)); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("non-transactional batch in a transactional request: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := send(nil, txnBatch(0x10)); p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional batch without transactional id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType, fc.CoordinatorKeys = 4, 1, []string{"tx-rules"}
	if co := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0]; co.ErrorCode != 0 || co.NodeID != 7 {
		t.Fatalf("FindCoordinator(transaction): %+v", co)
	}
}

// TestTransactionalIDACLs: transactional ids are authorized as Kafka
// authorizes its TransactionalId resource: WRITE to use one, DESCRIBE to
// find its coordinator, describe or list it.
func TestTransactionalIDACLs(t *testing.T) {
	rules, err := acl.Parse(strings.NewReader(`
allow User:ANONYMOUS WRITE topic:*
allow User:ANONYMOUS READ  group:*
allow User:ANONYMOUS WRITE transactional_id:ok-*
`))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{offsets: fakebackends.NewOffsets(), authz: rules})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok := txnClient(t, h.addr, "ok-1")
	if err := ok.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := ok.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("allowed")}).FirstErr(); err != nil {
		t.Fatalf("allowed transactional id: %v", err)
	}
	if err := ok.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("allowed transactional id: commit: %v", err)
	}
	no := txnClient(t, h.addr, "no-1")
	// franz-go initializes its producer id at once; the refusal comes
	// from BeginTransaction or from the first produce.
	err = no.BeginTransaction()
	if err == nil {
		err = no.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("refused")}).FirstErr()
	}
	if err == nil || !strings.Contains(err.Error(), "TRANSACTIONAL_ID_AUTHORIZATION_FAILED") {
		t.Fatalf("refused transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}

	c := dialRaw(t, h.addr)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorType, fc.CoordinatorKeys = 4, 1, []string{"ok-1", "no-1"}
	co := c.roundTrip(fc).(*kmsg.FindCoordinatorResponse).Coordinators
	if co[0].ErrorCode != 0 || co[1].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("FindCoordinator: %+v", co)
	}
	dr := kmsg.NewPtrDescribeTransactionsRequest()
	dr.TransactionalIDs = []string{"ok-1", "no-1"}
	d := c.roundTrip(dr).(*kmsg.DescribeTransactionsResponse).TransactionStates
	if d[0].ErrorCode != 0 || d[1].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("DescribeTransactions: %+v", d)
	}
	req := produceReq(9, -1, "orders", 0, batchWith([]string{"x"}, 5, 0x10))
	req.TransactionID = kmsg.StringPtr("no-1")
	if p := c.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("produce with a refused transactional id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	l := c.roundTrip(kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse).TransactionStates
	if len(l) != 1 || l[0].TransactionalID != "ok-1" {
		t.Fatalf("ListTransactions: %+v, want only ok-1", l)
	}
}

// TestAddPartitionsToTxnBrokerForm: v4+ carries several transactions,
// some only verifying that partitions are in their transaction.
func TestAddPartitionsToTxnBrokerForm(t *testing.T) {
	h, _ := txnHarness(t)
	c := dialRaw(t, h.addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, kmsg.StringPtr("tx-v4"), 60000
	ir := c.roundTrip(init).(*kmsg.InitProducerIDResponse)
	send := func(verify bool, parts ...int32) []kmsg.AddPartitionsToTxnResponseTransactionTopicPartition {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 5
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "tx-v4", ir.ProducerID, ir.ProducerEpoch, verify
		tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "orders", Partitions: parts}}
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tx}
		resp := c.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 || len(resp.Transactions) != 1 || resp.Transactions[0].TransactionalID != "tx-v4" {
			t.Fatalf("AddPartitionsToTxn v5: %+v", resp)
		}
		return resp.Transactions[0].Topics[0].Partitions
	}
	if ps := send(true, 1); ps[0].ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("verify before adding: %v", kerr.ErrorForCode(ps[0].ErrorCode))
	}
	if ps := send(false, 1); ps[0].ErrorCode != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(ps[0].ErrorCode))
	}
	if ps := send(true, 1, 2); ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("verify after adding partition 1: %v, %v", kerr.ErrorForCode(ps[0].ErrorCode), kerr.ErrorForCode(ps[1].ErrorCode))
	}
}

// TestTransactionSurvivesFrontdoorRestart: with a state dir, a transaction
// open when frontdoor stops is committed by its producer after the
// restart, with everything it staged before.
func TestTransactionSurvivesFrontdoorRestart(t *testing.T) {
	h := newHarness(t, harnessOpts{offsets: fakebackends.NewOffsets(), stateDir: t.TempDir()})
	cl := txnClient(t, h.addr, "tx-restart")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte(fmt.Sprintf("before-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	h.restartFrontdoor(t)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the restart: %v", err)
	}
	if n := len(h.ap.Log(100, 1)); n != 0 {
		t.Fatalf("%d records stored before the commit", n)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}
	if got := h.ap.Log(100, 1); len(got) != 5 || got[0] != "before-0" || got[4] != "after" {
		t.Fatalf("stored %q, want the 4 records staged before the restart and the one after", got)
	}
}
