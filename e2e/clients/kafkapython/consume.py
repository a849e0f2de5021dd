"""kafka-python consume runner of Ferry's client harness (contract: ../README.md).

Reads records with the unmodified kafka.KafkaConsumer and prints one JSON line per record as it is
delivered. Without --group the partitions are assign()ed and sought to --from; with --group the
consumer subscribe()s as a member of that group, auto-commit off, and --commit commits the printed
records' offsets synchronously before close() leaves the group.
"""
import base64
import json
import os
import sys
import threading
import time
import traceback

import connection
from connection import usage

EXIT_OK, EXIT_FAILED = 0, 1


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
        elif name in ("--count", "--partition"):
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
    if "topic" not in o:
        usage("--topic is required")
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
        line[name] = bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        line[name + "_b64"] = base64.b64encode(b).decode()


def record_line(m):
    line = {"partition": m.partition, "offset": m.offset}
    text_or_b64(line, "key", m.key)
    text_or_b64(line, "value", m.value)
    headers = []
    for k, v in m.headers or []:
        h = {}
        text_or_b64(h, "v", v)
        headers.append([k, h["v"]] if "v" in h else [k, None, h["v_b64"]])
    line["headers"] = headers
    line["timestamp_ms"] = m.timestamp
    return json.dumps(line)


def main(argv):
    o = parse(argv)
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    count = o["count"]
    printed = 0
    lock = threading.Lock()

    def expire():
        with lock:
            if printed < count:
                sys.stderr.write(f"kafka-python runner: read {printed} of {count} records before the deadline ({o['timeout']}s)\n")
            else:
                sys.stderr.write(f"kafka-python runner: commit and close did not end before the deadline ({o['timeout']}s)\n")
            sys.stdout.flush()
            os._exit(EXIT_FAILED)  # what was printed stands; closing could outlast the deadline

    deadline = connection.Deadline(o["timeout"], expire)
    conf = connection.conf(o)
    conf["enable_auto_commit"] = False
    if "group" in o:
        conf.update({"group_id": o["group"], "auto_offset_reset": o["from"]})
    c = KafkaConsumer(**conf)
    topic = o["topic"]
    if "group" in o:
        c.subscribe([topic])
    else:
        if "partition" in o:
            parts = [o["partition"]]
        else:
            parts = set()
            while not parts:  # until metadata names the topic's partitions (or the deadline)
                parts = c.partitions_for_topic(topic)
                if not parts:
                    time.sleep(0.1)
            parts = sorted(parts)
        tps = [TopicPartition(topic, p) for p in parts]
        c.assign(tps)
        if o["from"] == "earliest":
            c.seek_to_beginning(*tps)
        elif o["from"] == "latest":
            c.seek_to_end(*tps)
        else:
            for tp in tps:
                c.seek(tp, int(o["from"]))
    nxt = {}
    while printed < count:
        for tp, msgs in c.poll(timeout_ms=1000).items():
            for m in msgs:
                if printed == count:
                    break
                with lock:
                    sys.stdout.write(record_line(m) + "\n")
                    sys.stdout.flush()
                    printed += 1
                nxt[tp.partition] = m.offset + 1
    if o.get("commit"):
        c.commit({TopicPartition(topic, p): OffsetAndMetadata(off, "", -1) for p, off in nxt.items()})
    c.close()  # leaves the group
    if not deadline.finish():
        threading.Event().wait()  # the deadline's timer is exiting
    deadline.cancel()
    return EXIT_OK


def run(argv):
    try:
        return main(argv)
    except Exception as e:  # the client failed: exit 1 with what was printed, and why
        sys.stderr.write(f"kafka-python runner: {type(e).__name__}: {e}\n{traceback.format_exc()}")
        sys.stdout.flush()
        os._exit(EXIT_FAILED)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
