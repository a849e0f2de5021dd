"""Calls a Schema Registry with HTTP Basic credentials through confluent-kafka-python's client.

Usage: schema_registry_auth.py URL USER:PASSWORD SUBJECT

Prints one JSON object: {"latest_id": ...} when get_latest_version(SUBJECT) answered, or
{"http_status": ..., "code": ...} of the registry's refusal.
"""
import json
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError


def main():
    url, user_info, subject = sys.argv[1:4]
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": user_info})
    try:
        print(json.dumps({"latest_id": client.get_latest_version(subject).schema_id}))
    except SchemaRegistryError as e:
        print(json.dumps({"http_status": e.http_status_code, "code": e.error_code}))


if __name__ == "__main__":
    main()
