#!/usr/bin/python3
"""Scenarios run with aio-pika (Debian's python3-aio-pika, over aiormq) against a Warren node:

    aio_pika_scenarios.py PORT SCENARIO

Each asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
"""
import asyncio
import sys

import aio_pika

PORT = int(sys.argv[1])
SCENARIO = sys.argv[2]
PATIENCE = 30  # seconds: a guard against hanging, never a speed expectation


def expect(cond, what):
    if not cond:
        print("FAILED:", what, file=sys.stderr)
        sys.exit(1)


async def connect():
    return await aio_pika.connect(f"amqp://guest:guest@127.0.0.1:{PORT}/", timeout=PATIENCE)


async def take(queue, n):
    """Consumes n messages (acked) and returns their bodies."""
    got = []
    async with queue.iterator() as it:
        async for message in it:
            async with message.process():
                got.append(message.body.decode())
            if len(got) == n:
                break
    return got


async def get_eventually(queue):
    """basic.get until a message is there: a publish or a dead-letter reaches its queue
    asynchronously, so an immediate get may find it empty. PATIENCE is only a guard."""
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while True:
        try:
            return await queue.get(timeout=PATIENCE)
        except aio_pika.exceptions.QueueEmpty:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.05)


async def priorities_and_dead_letters():
    conn = await connect()
    ch = await conn.channel()
    await ch.set_qos(prefetch_count=10)
    pq = await ch.declare_queue("aio-pq", arguments={"x-max-priority": 9})
    for body, prio in (("low", 1), ("high", 9), ("mid", 5)):
        await ch.default_exchange.publish(aio_pika.Message(body.encode(), priority=prio), "aio-pq")
    got = await asyncio.wait_for(take(pq, 3), PATIENCE)
    expect(got == ["high", "mid", "low"], f"priority order: {got}")

    dlx = await ch.declare_exchange("aio-dlx", aio_pika.ExchangeType.FANOUT)
    dead = await ch.declare_queue("aio-dead")
    await dead.bind(dlx)
    work = await ch.declare_queue("aio-work", arguments={"x-dead-letter-exchange": "aio-dlx"})
    await ch.default_exchange.publish(aio_pika.Message(b"job"), "aio-work")
    message = await get_eventually(work)
    await message.reject(requeue=False)
    died = await get_eventually(dead)
    death = died.headers["x-death"][0]
    expect(death["reason"] == "rejected" and death["queue"] == "aio-work" and death["count"] == 1,
           f"x-death: {death}")
    await died.ack()
    await conn.close()


async def transactions_and_channel_errors():
    conn = await connect()
    ch = await conn.channel(publisher_confirms=False)
    q = await ch.declare_queue("aio-tx")
    async with ch.transaction():
        await ch.default_exchange.publish(aio_pika.Message(b"in-tx"), "aio-tx")
    tx = ch.transaction()
    await tx.select()
    await ch.default_exchange.publish(aio_pika.Message(b"rolled-back"), "aio-tx")
    await tx.rollback()
    got = await asyncio.wait_for(take(q, 1), PATIENCE)
    expect(got == ["in-tx"], f"the committed message only: {got}")
    declared = await ch.declare_queue("aio-tx", passive=True)
    expect(declared.declaration_result.message_count == 0, "nothing left")

    bad = await conn.channel()
    try:
        await bad.get_exchange("no-such-exchange", ensure=True)
        expect(False, "a passive declare of a missing exchange fails")
    except aio_pika.exceptions.ChannelClosed as e:
        expect("404" in str(e) or "NOT_FOUND" in str(e), f"404: {e!r}")
    again = await conn.channel()
    await again.declare_queue("aio-after-error")
    await conn.close()


async def exchange_bindings_and_consumer_priority():
    conn = await connect()
    ch = await conn.channel()
    src = await ch.declare_exchange("aio-src", aio_pika.ExchangeType.TOPIC)
    dst = await ch.declare_exchange("aio-dst", aio_pika.ExchangeType.FANOUT)
    await dst.bind(src, routing_key="orders.#")
    q = await ch.declare_queue("aio-e2e")
    await q.bind(dst)
    await src.publish(aio_pika.Message(b"o1"), "orders.eu")
    await src.publish(aio_pika.Message(b"x"), "invoices.eu")
    got = await asyncio.wait_for(take(q, 1), PATIENCE)
    expect(got == ["o1"], f"routed through aio-dst: {got}")
    await dst.unbind(src, routing_key="orders.#")
    await src.publish(aio_pika.Message(b"o2"), "orders.eu")
    declared = await ch.declare_queue("aio-e2e", passive=True)
    expect(declared.declaration_result.message_count == 0, "unbound: nothing arrives")

    high_ch = await conn.channel()
    await high_ch.set_qos(prefetch_count=1)
    low_ch = await conn.channel()
    cq = await high_ch.declare_queue("aio-cprio")
    low_q = await low_ch.declare_queue("aio-cprio", passive=True)
    seen = []
    await cq.consume(lambda m: seen.append(("high", m)), arguments={"x-priority": 5})
    await low_q.consume(lambda m: seen.append(("low", m)), no_ack=True)
    for i in range(3):
        await ch.default_exchange.publish(aio_pika.Message(f"m{i}".encode()), "aio-cprio")
    for _ in range(PATIENCE * 20):
        if len(seen) == 3:
            break
        await asyncio.sleep(0.05)
    names = [n for n, _ in seen]
    expect(names[0] == "high" and names.count("high") == 1 and names.count("low") == 2,
           f"the high-priority consumer first, the rest past its prefetch: {names}")
    await conn.close()


if __name__ == "__main__":
    asyncio.run(globals()[SCENARIO]())
    print("ok", SCENARIO, file=sys.stderr)
