"""Drives a Schema Registry with confluent-kafka-python's SchemaRegistryClient and Avro serdes.

Usage: schema_registry.py URL SUBJECT SCHEMA_JSON BAD_SCHEMA_JSON RECORD_JSON JSON_TOPIC JSON_SCHEMA JSON_RECORD

Runs, in order, and prints one JSON object with what each step got:
  latest      get_latest_version(SUBJECT) before anyone registered (the registry derives it)
  register    register_schema(SUBJECT, SCHEMA) twice (ids must agree)
  lookup      lookup_schema(SUBJECT, SCHEMA)
  by_id       get_schema(id)
  refused     register_schema(SUBJECT, BAD_SCHEMA): the error's HTTP status, code and message
  serde       AvroSerializer (auto.register.schemas off, use.latest.version on) then
              AvroDeserializer of RECORD: the framed schema id and the decoded record
  json        JSONSerializer of JSON_RECORD to JSON_TOPIC (registering JSON_SCHEMA), then
              JSONDeserializer: the framed id, the id registered, the decoded record
"""
import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    url, subject, schema, bad, record, json_topic, json_schema, json_record = sys.argv[1:9]
    client = SchemaRegistryClient({"url": url})
    out = {}

    latest = client.get_latest_version(subject)
    out["latest"] = {"id": latest.schema_id, "version": latest.version, "schema": latest.schema.schema_str}

    first = client.register_schema(subject, Schema(schema, "AVRO"))
    # A new client: the first answer must not come from the cache.
    second = SchemaRegistryClient({"url": url}).register_schema(subject, Schema(schema, "AVRO"))
    out["register"] = [first, second]

    found = client.lookup_schema(subject, Schema(schema, "AVRO"))
    out["lookup"] = {"id": found.schema_id, "version": found.version, "subject": found.subject}

    out["by_id"] = SchemaRegistryClient({"url": url}).get_schema(first).schema_str

    try:
        client.register_schema(subject, Schema(bad, "AVRO"))
        out["refused"] = None
    except SchemaRegistryError as e:
        out["refused"] = {"http_status": e.http_status_code, "code": e.error_code, "message": e.error_message}

    topic = subject.removesuffix("-value")
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = AvroSerializer(SchemaRegistryClient({"url": url}), conf={"auto.register.schemas": False, "use.latest.version": True})
    framed = ser(json.loads(record), ctx)
    des = AvroDeserializer(SchemaRegistryClient({"url": url}))
    decoded = des(framed, ctx)
    out["serde"] = {"magic": framed[0], "id": int.from_bytes(framed[1:5], "big"), "decoded": decoded}

    jctx = SerializationContext(json_topic, MessageField.VALUE)
    jser = JSONSerializer(json_schema, SchemaRegistryClient({"url": url}))
    jframed = jser(json.loads(json_record), jctx)
    jdes = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": url}))
    registered = client.get_latest_version(json_topic + "-value")
    out["json"] = {"magic": jframed[0], "id": int.from_bytes(jframed[1:5], "big"), "registered_id": registered.schema_id,
                   "type": registered.schema.schema_type, "decoded": jdes(jframed, jctx)}

    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
