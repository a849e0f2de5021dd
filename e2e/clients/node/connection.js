'use strict';
// The flags produce.js and consume.js share — bootstrap servers and SASL — and the Kafka client
// they configure (contract: ../README.md). TLS flags are not wired for kafkajs: they are rejected
// as unknown flags.
const fs = require('node:fs');
const { Kafka, logLevel } = require('kafkajs');

const EXIT_USAGE = 2;

function usage(msg) {
  process.stderr.write(`kafkajs runner: ${msg}\n`);
  process.exit(EXIT_USAGE);
}

const FLAGS = {
  '--bootstrap': 'bootstrap', '--sasl-user': 'saslUser', '--sasl-password': 'saslPassword',
  '--sasl-mechanism': 'saslMechanism', '--sasl-token-file': 'saslTokenFile',
};

// Stores a connection flag in o; false when name is not one.
function setFlag(o, name, v) {
  if (!(name in FLAGS)) return false;
  o[FLAGS[name]] = v;
  return true;
}

function check(o) {
  if (!o.bootstrap) usage('--bootstrap is required');
  if ((o.saslUser === undefined) !== (o.saslPassword === undefined)) usage('--sasl-user and --sasl-password must be given together');
}

// kafkajs logs with console.* by default, which would mix into the JSON on stdout.
const logCreator = () => ({ namespace, label, log }) => {
  const { message, ...extra } = log;
  process.stderr.write(`${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`);
};

function kafka(o) {
  return new Kafka({
    clientId: 'ferry-e2e-kafkajs',
    brokers: o.bootstrap.split(','),
    logLevel: logLevel.WARN,
    logCreator,
    ...(o.saslTokenFile !== undefined ? {
      sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: fs.readFileSync(o.saslTokenFile, 'utf8').trim() }) },
    } : {}),
    ...(o.saslUser !== undefined ? { sasl: { mechanism: (o.saslMechanism || 'PLAIN').toLowerCase(), username: o.saslUser, password: o.saslPassword } } : {}),
  });
}

module.exports = { usage, setFlag, check, kafka };
