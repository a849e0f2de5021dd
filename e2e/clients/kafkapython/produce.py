"""kafka-python produce runner of Ferry's client harness (contract: ../README.md).

Sends the stdin JSON-lines records with the unmodified kafka.KafkaProducer (pure Python) and prints
one JSON line per record from its futures. Only options a flag names are set; otherwise
kafka-python's defaults apply (acks=all, idempotence on, no compression, murmur2 partitioner).
"""
import json
import os
import sys
import threading

import connection
from connection import usage

EXIT_OK, EXIT_FAILED = 0, 1


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
            o["idempotent"] = v == "true"
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


KNOWN = {"key", "value", "headers", "timestamp_ms"}


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
        if set(r) - KNOWN:
            usage(f"line {n}: unknown members {sorted(set(r) - KNOWN)}")
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
        import kafka

        print(f"kafka-python {kafka.__version__}")
        return EXIT_OK
    o = parse(argv)
    recs = read_records(o.get("key_field"))
    from kafka import KafkaProducer

    conf = connection.conf(o)
    if "acks" in o:
        conf["acks"] = "all" if o["acks"] == "all" else int(o["acks"])
    if o.get("compression") not in (None, "none"):
        conf["compression_type"] = o["compression"]
    if "idempotent" in o:
        conf["enable_idempotence"] = o["idempotent"]
    lines = [None] * len(recs)
    lock = threading.Lock()

    def finish():
        """Prints every record's line (an error for those without a report) and exits."""
        with lock:
            code = EXIT_OK
            out = []
            for i, line in enumerate(lines):
                if line is None:
                    line = {"index": i, "error": f"no delivery report before the deadline ({o['timeout']}s)"}
                if "error" in line:
                    code = EXIT_FAILED
                out.append(json.dumps(line) + "\n")
            sys.stdout.write("".join(out))
            sys.stdout.flush()
            os._exit(code)  # the producer's threads would outlast a deadline

    deadline = connection.Deadline(o["timeout"], finish)

    def settle(i, line):
        with lock:
            if lines[i] is None:
                lines[i] = line

    try:
        p = KafkaProducer(**conf)
    except Exception as e:  # no broker, bad configuration: every record fails with it
        for i in range(len(recs)):
            settle(i, {"index": i, "error": f"kafka-python: {type(e).__name__}: {e}"})
        p = None
    if p is not None:
        for i, r in enumerate(recs):
            key = None if r.get("key") is None else r["key"].encode()
            value = None if r["value"] is None else r["value"].encode()
            headers = [(k, v.encode()) for k, v in (r.get("headers") or {}).items()]
            try:
                f = p.send(o["topic"], value=value, key=key, headers=headers, partition=o.get("partition"),
                           timestamp_ms=r.get("timestamp_ms"))
            except Exception as e:  # e.g. a record without key and value, which kafka-python refuses
                settle(i, {"index": i, "error": f"kafka-python: {type(e).__name__}: {e}"})
                continue
            # offset is -1 when there is no broker answer (acks=0): reported as "unknown".
            f.add_callback(lambda md, i=i: settle(i, {"index": i, "partition": md.partition, "offset": md.offset}))
            f.add_errback(lambda e, i=i: settle(i, {"index": i, "error": f"kafka-python: {type(e).__name__}: {e}"}))
        p.flush()
        # With acks=0 a send's future completes before its bytes reach the
        # socket: close lets the sender thread write what it holds, or the
        # exit below could cut the last batch off.
        p.close()
    if deadline.finish():
        deadline.cancel()
        finish()
    threading.Event().wait()  # the deadline's timer is printing and exiting


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
