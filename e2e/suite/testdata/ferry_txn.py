"""Transactions through Ferry with confluent-kafka-python (e2e/suite transactions_test.go).

Usage: ferry_txn.py BOOTSTRAP TXN_ID TOPIC
Commits ids 0-4, aborts ids 100-104, commits ids 200-204 (partitions 0 and 1 in turn) and
prints OK, or FAIL with the reason.
"""
import json
import sys

from confluent_kafka import Producer


def main():
    bootstrap, txn_id, topic = sys.argv[1:4]
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(60)
    for base, commit in ((0, True), (100, False), (200, True)):
        p.begin_transaction()
        for i in range(base, base + 5):
            p.produce(topic, json.dumps({"id": i, "name": "py"}).encode(), partition=i % 2)
        p.flush(60)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    print("OK")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the Go test shows the line
        print("FAIL: %r" % (e,))
