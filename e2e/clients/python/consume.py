"""confluent-kafka consume runner of Ferry's client harness (contract: ../README.md).

Reads records with the unmodified confluent_kafka.Consumer and prints one JSON line per record as it
is delivered. Without --group the partitions are assign()ed at an explicit offset; confluent-kafka
refuses to create a Consumer without a group.id, so a fixed one is set that nothing is committed to
(auto-commit is off). With --group the consumer subscribe()s as a member of that group, auto-commit
off; --commit commits the printed records' offsets synchronously, at the end and for the partitions
a rebalance revokes. --topic-regex R subscribes to
"^R" (librdkafka treats a topic starting with "^" as a regex) and prints each record's topic.
"""
import base64
import json
import os
import sys
import time

import connection
from connection import usage

EXIT_OK, EXIT_FAILED = 0, 1
# The group.id a group-less run must still set (no offsets are fetched or committed for it).
ASSIGN_GROUP_ID = "ferry-e2e-confluent-kafka-assign"


def parse(argv):
    if not argv or argv[0] != "consume":
        usage("usage: consume --bootstrap H:P --topic T --count N [flags]")
    o = {"timeout": 60.0, "from": "earliest"}
    args = argv[1:]
    while args:
        name = args.pop(0)
        if name == "--commit":  # the one flag without a value
            o["commit"] = True
            continue
        if not args:
            usage(f"{name} needs a value")
        v = args.pop(0)
        if connection.set_flag(o, name, v):
            pass
        elif name == "--topic":
            o["topic"] = v
        elif name == "--topic-regex":
            o["topic_regex"] = v
        elif name in ("--count", "--partition", "--metadata-max-age-ms"):
            if not v.isdigit():
                usage(f"{name} must be a number >= 0, got {v}")
            o[name[2:]] = int(v)
        elif name == "--from":
            if v not in ("earliest", "latest") and not v.isdigit():
                usage(f"--from must be earliest, latest or an offset, got {v}")
            o["from"] = v
        elif name == "--group":
            o["group"] = v
        elif name == "--timeout":
            try:
                o["timeout"] = float(v)
            except ValueError:
                usage(f"--timeout must be seconds, got {v}")
            if not o["timeout"] > 0:
                usage(f"--timeout must be positive, got {v}")
        else:
            usage(f"unknown flag {name}")
    connection.check(o)
    if ("topic" in o) == ("topic_regex" in o):
        usage("exactly one of --topic and --topic-regex is required")
    if "topic_regex" in o and "group" not in o:
        usage("--topic-regex needs --group")
    if o.get("count", 0) < 1:
        usage("--count must be >= 1")
    if o.get("commit") and "group" not in o:
        usage("--commit needs --group")
    if "group" in o and ("partition" in o or o["from"].isdigit()):
        usage("--partition and --from OFFSET are for group-less runs")
    return o


def text_or_b64(line, name, b):
    """Sets name to b as text, null, or (bytes that are not UTF-8) name_b64 to its base64."""
    if b is None:
        line[name] = None
        return
    try:
        line[name] = b.decode("utf-8")
    except UnicodeDecodeError:
        line[name + "_b64"] = base64.b64encode(b).decode()


def record_line(m, with_topic):
    line = {"topic": m.topic()} if with_topic else {}
    line.update({"partition": m.partition(), "offset": m.offset()})
    text_or_b64(line, "key", m.key())
    text_or_b64(line, "value", m.value())
    headers = []
    for k, v in m.headers() or []:
        h = {}
        text_or_b64(h, "v", v)
        headers.append([k, h["v"]] if "v" in h else [k, None, h["v_b64"]])
    line["headers"] = headers
    line["timestamp_ms"] = m.timestamp()[1]
    return json.dumps(line)


def main(argv):
    o = parse(argv)
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + o["timeout"]
    conf = connection.conf(o)
    conf["enable.auto.commit"] = False
    if o.get("metadata-max-age-ms"):
        conf["topic.metadata.refresh.interval.ms"] = o["metadata-max-age-ms"]
    if "group" in o:
        conf["group.id"] = o["group"]
        conf["auto.offset.reset"] = o["from"]
    else:
        conf["group.id"] = ASSIGN_GROUP_ID
    printed, count = 0, o["count"]
    try:
        c = Consumer(conf)
        nxt = {}

        def on_revoke(consumer, revoked):
            # With --commit, what was printed of a partition a rebalance takes away is committed
            # first, so that whoever reads it next (this member included) starts after it.
            done = [TopicPartition(tp.topic, tp.partition, nxt.pop((tp.topic, tp.partition)))
                    for tp in revoked if (tp.topic, tp.partition) in nxt]
            if o.get("commit") and done:
                consumer.commit(offsets=done, asynchronous=False)

        regex = "topic_regex" in o
        if regex:
            pattern = o["topic_regex"]
            c.subscribe([pattern if pattern.startswith("^") else "^" + pattern], on_revoke=on_revoke)
        elif "group" in o:
            c.subscribe([o["topic"]], on_revoke=on_revoke)
        else:
            if "partition" in o:
                parts = [o["partition"]]
            else:
                t = c.list_topics(o["topic"], timeout=max(0.1, deadline - time.monotonic())).topics[o["topic"]]
                if t.error is not None:
                    raise KafkaException(t.error)
                parts = sorted(t.partitions)
            start = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(o["from"])
            if start is None:
                start = int(o["from"])
            c.assign([TopicPartition(o["topic"], p, start) for p in parts])
        while printed < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            m = c.poll(min(left, 1.0))
            if m is None:
                continue
            if m.error():
                sys.stderr.write(f"confluent-kafka runner: {m.error()}\n")
                continue
            sys.stdout.write(record_line(m, regex) + "\n")
            sys.stdout.flush()
            printed += 1
            nxt[(m.topic(), m.partition())] = m.offset() + 1
        if printed < count:
            sys.stderr.write(f"confluent-kafka runner: read {printed} of {count} records before the deadline ({o['timeout']}s)\n")
            os._exit(EXIT_FAILED)  # what was printed stands; closing could outlast the deadline
        if o.get("commit"):
            c.commit(offsets=[TopicPartition(t, p, off) for (t, p), off in nxt.items()], asynchronous=False)
        c.close()  # leaves the group
    except KafkaException as e:
        sys.stderr.write(f"confluent-kafka runner: {e}\n")
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
