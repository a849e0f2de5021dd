package txnapi

import (
	"context"
	"github.com/ferrygw/ferry/frontdoor/internal/kafka"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferrygw/ferry/frontdoor/internal/acl"
	"github.com/ferrygw/ferry/frontdoor/internal/txn"
)

// ListTransactions v0-v2: the transactional ids this frontdoor
// coordinates, filtered by state, producer id, (v1) minimum running time
// and (v2) an RE2 pattern the whole id must match, as a broker filters
// them. A state filter naming no known state is listed in
// unknown_state_filters; a pattern that does not compile is
// INVALID_REGULAR_EXPRESSION.
const (
	ListTransactionsKey int16 = 66
	ListTransactionsMin       = 0
	ListTransactionsMax       = 2
)

func (h *txnHandlers) listTransactions(_ context.Context, s *kafka.Session, req kafka.Request) (kafka.Reply, error) {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[txn.State]bool{}
	for _, f := range r.StateFilters {
		if st, ok := txn.ParseState(f); ok {
			states[st] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, f)
		}
	}
	if len(resp.UnknownStateFilters) > 0 && len(states) == 0 {
		// Only unknown states asked for: nothing matches them.
		return kafka.Ready(resp), nil
	}
	var pattern *regexp.Regexp
	if p := r.TransactionalIDPattern; p != nil && *p != "" {
		var err error
		if pattern, err = regexp.Compile("^(?:" + *p + ")$"); err != nil {
			s.Log.Info("ListTransactions refused: bad transactional id pattern", "pattern", *p, "err", err)
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return kafka.Ready(resp), nil
		}
	}
	pids := map[int64]bool{}
	for _, p := range r.ProducerIDFilters {
		pids[p] = true
	}
	now := time.Now()
	authz, principal := s.Authz, acl.Principal(s.User)
	for _, in := range h.coord.List() {
		switch {
		case authz != nil && !authz.AllowedTransactionalID(principal, acl.Describe, in.ID):
			continue // as a broker lists only what the principal may describe
		case len(states) > 0 && !states[in.State]:
			continue
		case len(pids) > 0 && !pids[in.ProducerID]:
			continue
		case pattern != nil && !pattern.MatchString(in.ID):
			continue
		case r.DurationFilterMillis >= 0 && r.Version >= 1 &&
			(in.Started.IsZero() || now.Sub(in.Started).Milliseconds() < r.DurationFilterMillis):
			continue
		}
		t := kmsg.NewListTransactionsResponseTransactionState()
		t.TransactionalID, t.ProducerID, t.TransactionState = in.ID, in.ProducerID, in.State.String()
		resp.TransactionStates = append(resp.TransactionStates, t)
	}
	return kafka.Ready(resp), nil
}
