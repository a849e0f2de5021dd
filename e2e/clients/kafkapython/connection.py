"""The flags produce.py and consume.py share: bootstrap servers, SASL and TLS (contract: ../README.md)."""
import sys
import threading


def usage(msg):
    sys.stderr.write(f"kafka-python runner: {msg}\n")
    sys.exit(2)


FLAGS = {"--bootstrap": "bootstrap", "--sasl-user": "sasl_user", "--sasl-password": "sasl_password",
         "--sasl-mechanism": "sasl_mechanism", "--sasl-token-file": "sasl_token_file",
         "--tls-ca": "tls_ca", "--tls-cert": "tls_cert", "--tls-key": "tls_key"}


def set_flag(o, name, v):
    """Stores a connection flag in o; False when name is not one."""
    key = FLAGS.get(name)
    if key is None:
        return False
    o[key] = v
    return True


def check(o):
    if "bootstrap" not in o:
        usage("--bootstrap is required")
    if ("sasl_user" in o) != ("sasl_password" in o):
        usage("--sasl-user and --sasl-password must be given together")
    mech = o.get("sasl_mechanism")
    if mech == "OAUTHBEARER" and "sasl_token_file" not in o:
        usage("--sasl-mechanism OAUTHBEARER needs --sasl-token-file")
    if "sasl_token_file" in o and mech != "OAUTHBEARER":
        usage("--sasl-token-file needs --sasl-mechanism OAUTHBEARER")
    if mech not in (None, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        usage(f"unknown --sasl-mechanism {mech}")
    if mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and "sasl_user" not in o:
        usage(f"--sasl-mechanism {mech} needs --sasl-user and --sasl-password")
    if ("tls_cert" in o) != ("tls_key" in o) or ("tls_cert" in o and "tls_ca" not in o):
        usage("--tls-cert and --tls-key go together, with --tls-ca")


def conf(o):
    """kafka-python settings for the connection flags: servers, client id, SASL, TLS."""
    c = {"bootstrap_servers": o["bootstrap"].split(","), "client_id": "ferry-e2e-kafka-python"}
    sasl = "sasl_user" in o or "sasl_token_file" in o
    tls = "tls_ca" in o
    c["security_protocol"] = {(False, False): "PLAINTEXT", (True, False): "SASL_PLAINTEXT",
                              (False, True): "SSL", (True, True): "SASL_SSL"}[(sasl, tls)]
    if "sasl_token_file" in o:
        c.update({"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": file_token_provider(o["sasl_token_file"])})
    elif "sasl_user" in o:
        c.update({"sasl_mechanism": o.get("sasl_mechanism", "PLAIN"),
                  "sasl_plain_username": o["sasl_user"], "sasl_plain_password": o["sasl_password"]})
    if tls:
        c["ssl_cafile"] = o["tls_ca"]
        if "tls_cert" in o:
            c.update({"ssl_certfile": o["tls_cert"], "ssl_keyfile": o["tls_key"]})
    return c


def file_token_provider(path):
    """A token provider that reads the JWT in path at each login."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class FileTokenProvider(AbstractTokenProvider):
        def token(self):
            with open(path) as f:
                return f.read().strip()

    return FileTokenProvider()


class Deadline:
    """Calls on_expiry once, from a timer thread, when the run's --timeout has passed, unless
    cancel() came first. kafka-python's calls block on their own timeouts (bootstrap 30 s, metadata
    60 s), longer than a run may take, so the deadline is kept beside them instead of in them."""

    def __init__(self, seconds, on_expiry):
        self.lock = threading.Lock()
        self.done = False
        self.timer = threading.Timer(seconds, self._expire, args=(on_expiry,))
        self.timer.daemon = True
        self.timer.start()

    def _expire(self, on_expiry):
        if self.finish():
            on_expiry()

    def finish(self):
        """Claims the end of the run: True for the first caller only."""
        with self.lock:
            first, self.done = not self.done, True
            return first

    def cancel(self):
        self.timer.cancel()
