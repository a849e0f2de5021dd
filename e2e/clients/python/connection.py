"""The flags produce.py and consume.py share: bootstrap servers and SASL (contract: ../README.md).

TLS flags are not wired for confluent-kafka: they are rejected as unknown flags.
"""
import base64
import json
import sys


def usage(msg):
    sys.stderr.write(f"confluent-kafka runner: {msg}\n")
    sys.exit(2)


def set_flag(o, name, v):
    """Stores a connection flag in o; False when name is not one."""
    key = {"--bootstrap": "bootstrap", "--sasl-user": "sasl_user", "--sasl-password": "sasl_password",
           "--sasl-mechanism": "sasl_mechanism", "--sasl-token-file": "sasl_token_file"}.get(name)
    if key is None:
        return False
    o[key] = v
    return True


def check(o):
    if "bootstrap" not in o:
        usage("--bootstrap is required")
    if ("sasl_user" in o) != ("sasl_password" in o):
        usage("--sasl-user and --sasl-password must be given together")


def conf(o):
    """librdkafka settings for the connection flags: servers, client id, SASL."""
    c = {"bootstrap.servers": o["bootstrap"], "client.id": "ferry-e2e-confluent-kafka"}
    if "sasl_token_file" in o:
        path = o["sasl_token_file"]

        def oauth_cb(_config):
            # librdkafka asks again before the token runs out (and re-authenticates).
            with open(path) as f:
                token = f.read().strip()
            claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
            return token, float(claims["exp"])

        c.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER", "oauth_cb": oauth_cb})
    if "sasl_user" in o:
        c.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": o.get("sasl_mechanism", "PLAIN"),
                  "sasl.username": o["sasl_user"], "sasl.password": o["sasl_password"]})
    return c
