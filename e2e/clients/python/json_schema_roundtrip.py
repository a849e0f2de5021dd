"""Produces JSON Schema records through Ferry with confluent-kafka-python's JSONSerializer and
consumes them back with its JSONDeserializer.

Usage: json_schema_roundtrip.py BOOTSTRAP REGISTRY_URL TOPIC MODE RECORDS_JSON [SCHEMA_JSON]

MODE is "auto" (auto.register.schemas on, SCHEMA_JSON registered under TOPIC-value, and the
serializer validates each record against it before sending), "latest" (auto.register.schemas off,
use.latest.version on) or "consume" (nothing produced: as many records as RECORDS_JSON lists are
consumed, e.g. rows another Fluss writer wrote).

Prints one JSON object: "produced" (the partition and offset of each record, or its error) and
"consumed" (each record read back: the framed schema id and the decoded object).
"""
import datetime
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    bootstrap, url, topic, mode, records = sys.argv[1:6]
    schema = sys.argv[6] if len(sys.argv) > 6 else None
    records = json.loads(records)
    registry = SchemaRegistryClient({"url": url})
    if mode == "auto":
        ser = JSONSerializer(schema, registry, conf={"auto.register.schemas": True})
    else:
        ser = JSONSerializer(None, registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(topic, MessageField.VALUE)

    produced = [] if mode == "consume" else [None] * len(records)

    def report(i):
        def cb(err, msg):
            produced[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, r in enumerate(records if mode != "consume" else []):
        p.produce(topic, value=ser(r, ctx), partition=0, on_delivery=report(i))
    p.flush(60)

    des = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": url}))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "json-schema-" + topic + "-" + mode,
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
        consumed.append({"offset": msg.offset(), "magic": v[0], "id": int.from_bytes(v[1:5], "big"), "value": des(v, ctx)})
    c.close()
    print(json.dumps({"produced": produced, "consumed": consumed}))


if __name__ == "__main__":
    main()
