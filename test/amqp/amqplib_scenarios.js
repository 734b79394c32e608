// Scenarios run with amqplib (Node.js, from npm) against a Warren node's AMQP port.
//
//   NODE_PATH=DIR/node_modules node amqplib_scenarios.js PORT
//
// Exits non-zero on the first expectation that does not hold.
'use strict';
const amqp = require('amqplib');
const port = process.argv[2];

function expect(cond, what) {
  if (!cond) {
    console.error('FAILED: ' + what);
    process.exit(1);
  }
}

// Resolves with n messages consumed from queue (acking each unless told not to).
function take(ch, queue, n, {ack = true, args = undefined} = {}) {
  return new Promise((resolve, reject) => {
    const got = [];
    const guard = setTimeout(() => reject(new Error(`only ${got.length} of ${n} from ${queue}`)),
                             30000);
    ch.consume(queue, (msg) => {
      if (got.length === n) return;  // past what was asked for, before the cancel took hold
      got.push(msg);
      if (ack) ch.ack(msg);
      if (got.length === n) {
        clearTimeout(guard);
        ch.cancel(msg.fields.consumerTag).then(() => resolve(got), reject);
      }
    }, {arguments: args}).catch(reject);
  });
}

async function main() {
  const conn = await amqp.connect(`amqp://guest:guest@127.0.0.1:${port}`);
  const ch = await conn.createConfirmChannel();

  // Confirmed persistent publishes to a durable queue, with headers and properties.
  await ch.assertExchange('js.direct', 'direct', {durable: true});
  const q = await ch.assertQueue('js.q', {durable: true});
  expect(q.queue === 'js.q' && q.messageCount === 0, 'assertQueue answers declare-ok');
  await ch.bindQueue('js.q', 'js.direct', 'k');
  for (let i = 0; i < 100; i++)
    ch.publish('js.direct', 'k', Buffer.from(`m${i}`),
               {persistent: true, headers: {i}, contentType: 'text/plain'});
  await ch.waitForConfirms();
  expect((await ch.checkQueue('js.q')).messageCount === 100, '100 confirmed and queued');

  // Prefetch and manual acks: everything arrives once, in order.
  await ch.prefetch(10);
  const got = await take(ch, 'js.q', 100);
  expect(got.every((m, i) => m.content.toString() === `m${i}`), 'in publish order');
  expect(got[7].properties.headers.i === 7, 'headers survive');
  expect(got[0].properties.contentType === 'text/plain', 'content type survives');
  expect(got[0].properties.deliveryMode === 2, 'persistent delivery mode');

  // nack with requeue: the message comes back redelivered.
  ch.sendToQueue('js.q', Buffer.from('again'));
  await ch.waitForConfirms();
  const [first] = await take(ch, 'js.q', 1, {ack: false});
  ch.nack(first, false, true);
  const [second] = await take(ch, 'js.q', 1);
  expect(second.content.toString() === 'again' && second.fields.redelivered,
         'a requeued message is redelivered');

  // A missing queue closes the channel with 404, and the connection stays usable.
  const probe = await conn.createChannel();
  let code = 0;
  probe.on('error', () => {});
  try {
    await probe.checkQueue('js.missing');
  } catch (e) {
    code = e.code;
  }
  expect(code === 404, `checkQueue of a missing queue: 404, got ${code}`);
  // A stream: offsets from 0 in the x-stream-offset header, any start, a consumer group.
  const sc = await conn.createConfirmChannel();
  await sc.assertQueue('js.stream', {durable: true, arguments: {'x-queue-type': 'stream'}});
  for (let i = 0; i < 5; i++) sc.sendToQueue('js.stream', Buffer.from(`s${i}`));
  await sc.waitForConfirms();
  await sc.prefetch(10);
  const offsets = (ms) => ms.map((m) => Number(m.properties.headers['x-stream-offset']));
  const all = await take(sc, 'js.stream', 5, {args: {'x-stream-offset': 'first'}});
  expect(JSON.stringify(offsets(all)) === '[0,1,2,3,4]', `from first: ${offsets(all)}`);
  expect(all[4].content.toString() === 's4', 'stream bodies in order');
  const tail = await take(sc, 'js.stream', 2, {args: {'x-stream-offset': 3}});
  expect(JSON.stringify(offsets(tail)) === '[3,4]', `from offset 3: ${offsets(tail)}`);
  const grouped = await take(sc, 'js.stream', 5,
                             {args: {'x-stream-offset': 'first', 'x-stream-group': 'js'}});
  expect(offsets(grouped)[0] === 0, 'a group from first');
  expect((await sc.checkQueue('js.stream')).messageCount === 5, 'consuming removes nothing');

  const after = await conn.createChannel();
  await after.deleteQueue('js.q');
  await after.deleteExchange('js.direct');
  await conn.close();
}

main().then(() => console.error('ok amqplib'), (e) => {
  console.error('FAILED: ' + (e && e.stack || e));
  process.exit(1);
});
