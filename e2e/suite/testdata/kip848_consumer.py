"""A confluent-kafka group member with group.protocol=consumer (KIP-848), for e2e/suite.

Usage: kip848_consumer.py BOOTSTRAP TOPIC GROUP ASSIGNOR (group.remote.assignor). Prints, as Kafka's VerifiableConsumer does, one
JSON line per event: partitions_assigned and partitions_revoked (incremental, as the consumer
protocol hands them out) and records_consumed (one per record). Commits each record's offset
synchronously; on SIGTERM it closes, which leaves the group.
"""
import json
import signal
import sys

from confluent_kafka import Consumer, KafkaException

bootstrap, topic, group, assignor = sys.argv[1:5]
stop = False


def on_term(*_):
    global stop
    stop = True


def event(name, parts):
    print(json.dumps({"name": name, "partitions": [{"topic": p.topic, "partition": p.partition} for p in parts]}),
          flush=True)


signal.signal(signal.SIGTERM, on_term)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "group.remote.assignor": assignor, "auto.offset.reset": "earliest", "enable.auto.commit": False})
c.subscribe([topic], on_assign=lambda _, ps: event("partitions_assigned", ps),
            on_revoke=lambda _, ps: event("partitions_revoked", ps),
            on_lost=lambda _, ps: event("partitions_lost", ps))
while not stop:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        print(f"consume error: {m.error()}", file=sys.stderr, flush=True)
        continue
    try:
        c.commit(message=m, asynchronous=False)
    except KafkaException as e:
        print(f"commit failed: {e}", file=sys.stderr, flush=True)
        continue
    print(json.dumps({"name": "records_consumed", "partitions": [
        {"topic": m.topic(), "partition": m.partition(), "minOffset": m.offset(), "maxOffset": m.offset()}]}), flush=True)
c.close()
