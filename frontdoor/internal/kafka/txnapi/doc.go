// Package txnapi serves the transaction APIs (AddPartitionsToTxn,
// AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions,
// ListTransactions) on top of the coordinator in frontdoor/internal/txn.
// Transactional Produce and InitProducerId are package produce's,
// FindCoordinator for transactional ids package groupapi's.
package txnapi
