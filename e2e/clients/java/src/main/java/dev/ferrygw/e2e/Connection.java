package dev.ferrygw.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/** The flags produce and consume share: bootstrap servers, SASL and TLS (see e2e/clients/README.md). */
final class Connection {
  String bootstrap;
  String saslUser;
  String saslPassword;
  String saslMechanism = "PLAIN";
  String saslTokenFile;
  String tlsCa;
  String tlsCert;
  String tlsKey;

  /** Stores a connection flag; false when name is not one. */
  boolean set(String name, String v) {
    switch (name) {
      case "--bootstrap" -> bootstrap = v;
      case "--sasl-user" -> saslUser = v;
      case "--sasl-password" -> saslPassword = v;
      case "--sasl-mechanism" -> saslMechanism = v;
      case "--sasl-token-file" -> saslTokenFile = v;
      case "--tls-ca" -> tlsCa = v;
      case "--tls-cert" -> tlsCert = v;
      case "--tls-key" -> tlsKey = v;
      default -> {
        return false;
      }
    }
    return true;
  }

  void check() {
    if (bootstrap == null) {
      throw new IllegalArgumentException("--bootstrap is required");
    }
    if ((saslUser == null) != (saslPassword == null)) {
      throw new IllegalArgumentException("--sasl-user and --sasl-password must be given together");
    }
    if ((tlsCert == null) != (tlsKey == null) || (tlsCert != null && tlsCa == null)) {
      throw new IllegalArgumentException("--tls-cert and --tls-key go together, and with --tls-ca");
    }
  }

  /** Sets bootstrap.servers, client.id and the security properties. */
  void configure(Properties p) throws IOException {
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", "ferry-e2e-java");
    String security = "PLAINTEXT";
    if (saslTokenFile != null) {
      // KIP-768's file retriever reads the JWT from the file at each (re-)login.
      String url = Path.of(saslTokenFile).toUri().toString();
      System.setProperty("org.apache.kafka.sasl.oauthbearer.allowed.urls", url);
      security = "SASL_PLAINTEXT";
      p.put("sasl.mechanism", "OAUTHBEARER");
      p.put("sasl.login.callback.handler.class",
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
      p.put("sasl.oauthbearer.jwt.retriever.class", "org.apache.kafka.common.security.oauthbearer.FileJwtRetriever");
      p.put("sasl.oauthbearer.token.endpoint.url", url);
      p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;");
    }
    if (saslUser != null) {
      security = "SASL_PLAINTEXT";
      p.put("sasl.mechanism", saslMechanism);
      String module = saslMechanism.startsWith("SCRAM-")
          ? "org.apache.kafka.common.security.scram.ScramLoginModule"
          : "org.apache.kafka.common.security.plain.PlainLoginModule";
      p.put("sasl.jaas.config", module + " required username=\""
          + saslUser.replace("\"", "\\\"") + "\" password=\"" + saslPassword.replace("\"", "\\\"") + "\";");
    }
    if (tlsCa != null) {
      // PEM material inline (KIP-651): the trusted CAs and, for mTLS, the client's chain and key.
      security = security.replace("PLAINTEXT", "SSL");
      p.put("ssl.truststore.type", "PEM");
      p.put("ssl.truststore.certificates", Files.readString(Path.of(tlsCa)));
      if (tlsCert != null) {
        p.put("ssl.keystore.type", "PEM");
        p.put("ssl.keystore.certificate.chain", Files.readString(Path.of(tlsCert)));
        p.put("ssl.keystore.key", Files.readString(Path.of(tlsKey)));
      }
    }
    p.put("security.protocol", security);
  }
}
