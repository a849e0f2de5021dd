"""confluent-kafka runner of Ferry's client harness (contract: ../README.md).

Sends the stdin JSON-lines records with the unmodified confluent_kafka.Producer (librdkafka bundled
in the PyPI wheel) and prints one JSON line per record from its delivery reports. Only options a flag
names are set; otherwise librdkafka's defaults apply (acks=all, idempotence off, no compression,
consistent_random partitioner).
"""
import json
import sys
import time

import connection
from connection import usage

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parse(argv):
    if not argv or argv[0] != "produce":
        usage("usage: produce --bootstrap H:P --topic T [flags] < records.jsonl")
    o = {"timeout": 60.0}
    args = argv[1:]
    if len(args) % 2:
        usage(f"{args[-1]} needs a value")
    for name, v in zip(args[::2], args[1::2]):
        if connection.set_flag(o, name, v):
            pass
        elif name == "--topic":
            o["topic"] = v
        elif name == "--acks":
            if v not in ("0", "1", "all"):
                usage(f"--acks must be 0, 1 or all, got {v}")
            o["acks"] = v
        elif name == "--compression":
            if v not in ("none", "gzip", "snappy", "lz4", "zstd"):
                usage(f"--compression must be none, gzip, snappy, lz4 or zstd, got {v}")
            o["compression"] = v
        elif name == "--partition":
            if not v.isdigit():
                usage(f"--partition must be a number >= 0, got {v}")
            o["partition"] = int(v)
        elif name == "--idempotent":
            if v not in ("true", "false"):
                usage(f"--idempotent must be true or false, got {v}")
            o["idempotent"] = v
        elif name == "--key-field":
            o["key_field"] = v
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
    return o


def read_records(key_field):
    out = []
    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as e:
            usage(f"line {n}: {e}")
        if not isinstance(r, dict) or "value" not in r or not (r["value"] is None or isinstance(r["value"], str)):
            usage(f"line {n}: want an object with a string or null value")
        # A tombstone (null value) has no value to take the key from: it keeps its own.
        if key_field is not None and r["value"] is not None:
            try:
                doc = json.loads(r["value"])
            except ValueError:
                usage(f"line {n}: --key-field {key_field}: value is not JSON")
            if not isinstance(doc, dict):
                usage(f"line {n}: --key-field {key_field}: value is not a JSON object")
            k = doc.get(key_field)
            r["key"] = None if k is None else (k if isinstance(k, str) else json.dumps(k, separators=(",", ":")))
        out.append(r)
    return out


def main(argv):
    if argv and argv[0] == "check":
        import confluent_kafka

        print(f"confluent-kafka {confluent_kafka.__version__} librdkafka {confluent_kafka.libversion()[0]}")
        return EXIT_OK
    o = parse(argv)
    recs = read_records(o.get("key_field"))
    from confluent_kafka import KafkaException, Producer

    conf = connection.conf(o)
    if "acks" in o:
        conf["acks"] = o["acks"]
    if "compression" in o:
        conf["compression.type"] = o["compression"]
    if "idempotent" in o:
        conf["enable.idempotence"] = o["idempotent"] == "true"
    lines = [None] * len(recs)
    deadline = time.monotonic() + o["timeout"]

    def report(i):
        def cb(err, msg):
            if err is not None:
                lines[i] = {"index": i, "error": f"confluent-kafka: {err.str()}"}
            else:
                # offset() is None when librdkafka has none (acks=0): reported as -1, "unknown".
                off = msg.offset()
                lines[i] = {"index": i, "partition": msg.partition(), "offset": -1 if off is None else off}
        return cb

    try:
        p = Producer(conf)
    except KafkaException as e:
        for i in range(len(recs)):
            lines[i] = {"index": i, "error": f"confluent-kafka: {e}"}
        p = None
    if p is not None:
        for i, r in enumerate(recs):
            kw = {"value": None if r["value"] is None else r["value"].encode(), "on_delivery": report(i)}
            if r.get("key") is not None:
                kw["key"] = r["key"].encode()
            if r.get("headers"):
                kw["headers"] = [(k, v.encode()) for k, v in r["headers"].items()]
            if r.get("timestamp_ms") is not None:
                kw["timestamp"] = int(r["timestamp_ms"])
            if "partition" in o:
                kw["partition"] = o["partition"]
            while True:
                try:
                    p.produce(o["topic"], **kw)
                    break
                except BufferError:  # local queue full: serve delivery reports, then retry
                    if p.poll(0.1) == 0 and time.monotonic() > deadline:
                        break
                except KafkaException as e:
                    lines[i] = {"index": i, "error": f"confluent-kafka: {e}"}
                    break
            p.poll(0)
        p.flush(max(0.0, deadline - time.monotonic()))
    code = EXIT_OK
    for i, line in enumerate(lines):
        if line is None:
            line = {"index": i, "error": f"no delivery report before the deadline ({o['timeout']}s)"}
        if "error" in line:
            code = EXIT_FAILED
        sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
