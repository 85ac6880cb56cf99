// KafkaJS scenarios for tests/integration/test_kafkajs.py. Usage:
//   node kafkajs_client.js BOOTSTRAP SCENARIO TOPIC
// Prints one JSON line per fact; exits non-zero on failure.
"use strict";
const { Kafka, logLevel } = require("kafkajs");

const [bootstrap, scenario, topic] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "kafkajs-test",
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  retry: { retries: 8, initialRetryTime: 100 },
});

function out(fact) { process.stdout.write(JSON.stringify(fact) + "\n"); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (fn()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function produceConsume() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < 10; i++) {
    messages.push({ key: `k${i}`, value: JSON.stringify({ i }), partition: i % 2,
                    headers: { n: String(i) } });
  }
  const acks = await producer.send({ topic, messages });
  out({ produced: messages.length, partitions: acks.map((a) => a.partition).sort() });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${topic}-reader`, sessionTimeout: 6000,
                                    heartbeatInterval: 200, rebalanceTimeout: 6000, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      seen.push({ partition, offset: Number(message.offset), key: message.key.toString(),
                  value: JSON.parse(message.value.toString()),
                  header: message.headers.n.toString() });
    },
  });
  await waitFor("10 messages", () => seen.length >= 10);
  await consumer.commitOffsets(seen.map((s) => ({ topic, partition: s.partition,
                                                  offset: String(s.offset + 1) })));
  await consumer.disconnect();
  seen.sort((a, b) => a.value.i - b.value.i);
  out({ consumed: seen });
}

async function group() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();
  const groupId = `${topic}-group`;
  const assigned = {};
  function member(name) {
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 200,
                               rebalanceTimeout: 6000, maxWaitTimeInMs: 100 });
    c.on(c.events.GROUP_JOIN, (e) => {
      assigned[name] = (e.payload.memberAssignment[topic] || []).slice().sort();
      out({ member: name, memberId: e.payload.memberId, assignment: assigned[name] });
    });
    return c;
  }
  const total = () => Object.values(assigned).reduce((n, a) => n + a.length, 0);
  const a = member("a");
  const b = member("b");
  for (const c of [a, b]) {
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({ eachMessage: async () => {} });
  }
  await waitFor("two members sharing 4 partitions",
    () => assigned.a && assigned.b && assigned.a.length === 2 && assigned.b.length === 2);
  out({ phase: "both", a: assigned.a, b: assigned.b });
  await b.disconnect();  // LeaveGroup
  delete assigned.b;
  await waitFor("a alone with 4 partitions", () => assigned.a.length === 4);
  out({ phase: "left", a: assigned.a });
  const b2 = member("b");
  await b2.connect();
  await b2.subscribe({ topic, fromBeginning: true });
  await b2.run({ eachMessage: async () => {} });
  await waitFor("rejoined", () => assigned.b && assigned.b.length === 2 &&
                                  assigned.a.length === 2 && total() === 4);
  out({ phase: "rejoined", a: assigned.a, b: assigned.b });
  const adm = kafka.admin();
  await adm.connect();
  const described = await adm.describeGroups([groupId]);
  const g = described.groups[0];
  out({ describe: { state: g.state, protocol: g.protocol, members: g.members.length } });
  await adm.disconnect();
  await a.disconnect();
  await b2.disconnect();
}

async function adminDescribe() {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  const cluster = await admin.describeCluster();
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const topics = await admin.listTopics();
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: 2, name: topic }],
  });
  const offsets = await admin.fetchTopicOffsets(topic);
  out({
    cluster: { brokers: cluster.brokers.length, controller: cluster.controller,
               clusterId: cluster.clusterId },
    topic: { name: meta.topics[0].name, partitions: meta.topics[0].partitions.length },
    listed: topics.includes(topic),
    configs: configs.resources[0].configEntries.length > 0,
    offsets: offsets.map((o) => ({ partition: o.partition, high: o.high })),
  });
  await admin.disconnect();
}

const scenarios = { "produce-consume": produceConsume, group, admin: adminDescribe };
scenarios[scenario]().then(() => process.exit(0), (e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
