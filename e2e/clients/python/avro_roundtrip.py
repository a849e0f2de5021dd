"""Produces Avro records through Ferry with confluent-kafka-python's AvroSerializer and consumes
them back with its AvroDeserializer.

Usage: avro_roundtrip.py BOOTSTRAP REGISTRY_URL TOPIC MODE RECORDS_JSON [SCHEMA_JSON]

MODE is "auto" (auto.register.schemas on, SCHEMA_JSON registered under TOPIC-value), "latest"
(auto.register.schemas off, use.latest.version on: the subject's latest version, which the
registry derives from the table when nobody registered one) or "consume" (nothing produced: as
many records as RECORDS_JSON lists are consumed, e.g. rows another Fluss writer wrote). RECORDS_JSON is a list of objects;
decimal fields are given as strings and bytes fields as lists of integers, converted here.

Prints one JSON object: "produced" (the partition and offset of each record, or its error) and
"consumed" (each record read back: the framed schema id and the decoded object, decimals and
bytes converted back as above, dates and timestamps as ISO strings).
"""
import datetime
import decimal
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def to_avro(rec):
    out = {}
    for k, v in rec.items():
        if isinstance(v, str) and k in ("price",):
            v = decimal.Decimal(v)
        elif isinstance(v, list) and k in ("blob",):
            v = bytes(v)
        elif isinstance(v, str) and k in ("at",):
            v = datetime.datetime.fromisoformat(v)
        elif isinstance(v, str) and k in ("day",):
            v = datetime.date.fromisoformat(v)
        out[k] = v
    return out


def from_avro(v):
    if isinstance(v, dict):
        return {k: from_avro(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_avro(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bytes):
        return list(v)
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    return v


def main():
    bootstrap, url, topic, mode, records = sys.argv[1:6]
    schema = sys.argv[6] if len(sys.argv) > 6 else None
    records = json.loads(records)
    registry = SchemaRegistryClient({"url": url})
    if mode == "auto":
        ser = AvroSerializer(registry, schema, conf={"auto.register.schemas": True})
    else:
        ser = AvroSerializer(registry, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(topic, MessageField.VALUE)

    produced = [] if mode == "consume" else [None] * len(records)

    def report(i):
        def cb(err, msg):
            produced[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, r in enumerate(records if mode != "consume" else []):
        p.produce(topic, value=ser(to_avro(r), ctx), partition=0, on_delivery=report(i))
    p.flush(60)

    des = AvroDeserializer(SchemaRegistryClient({"url": url}))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "avro-" + topic + "-" + mode,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    consumed = []
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=60)
    while len(consumed) < len(records) and datetime.datetime.now() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            consumed.append({"error": str(msg.error())})
            break
        v = msg.value()
        consumed.append({"offset": msg.offset(), "magic": v[0], "id": int.from_bytes(v[1:5], "big"),
                         "value": from_avro(des(v, ctx))})
    c.close()
    print(json.dumps({"produced": produced, "consumed": consumed}))


if __name__ == "__main__":
    main()
