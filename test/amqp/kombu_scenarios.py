#!/usr/bin/python3
"""Scenarios run with kombu (Debian's python3-kombu over py-amqp, as Celery uses it) against a
Warren node:

    kombu_scenarios.py PORT SCENARIO

Each asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
"""
import sys

from kombu import Connection, Consumer, Exchange, Producer, Queue

PORT = int(sys.argv[1])
SCENARIO = sys.argv[2]
PATIENCE = 30  # seconds: a guard against hanging, never a speed expectation


def expect(cond, what):
    if not cond:
        print("FAILED:", what, file=sys.stderr)
        sys.exit(1)


def connect():
    return Connection(f"amqp://guest:guest@127.0.0.1:{PORT}//",
                      transport_options={"confirm_publish": True}, connect_timeout=PATIENCE)


def celery_like_tasks():
    """Tasks published with confirms and big integer headers, consumed with acks_late, one
    rejected and requeued, as Celery's worker does."""
    with connect() as conn:
        tasks = Exchange("celery", type="direct", durable=True)
        queue = Queue("celery", tasks, routing_key="celery", durable=True)
        with conn.channel() as ch:
            producer = Producer(ch, exchange=tasks, routing_key="celery")
            for i in range(20):
                producer.publish({"task": "add", "args": [i, i]}, declare=[queue],
                                 headers={"id": f"t{i}", "eta": None, "big": 1 << 40,
                                          "retries": 0},
                                 delivery_mode=2, serializer="json")
        done, requeued = [], []
        with conn.channel() as ch:
            def on_message(body, message):
                if body["args"][0] == 3 and not message.delivery_info["redelivered"]:
                    requeued.append(body["args"][0])
                    message.requeue()
                    return
                expect(message.headers["big"] == 1 << 40, f"big header: {message.headers}")
                done.append(body["args"][0])
                message.ack()

            with Consumer(ch, [queue], callbacks=[on_message], prefetch_count=4):
                while len(done) < 20:
                    conn.drain_events(timeout=PATIENCE)
        expect(sorted(done) == list(range(20)) and requeued == [3],
               f"every task once, the requeued one again: {sorted(done)} {requeued}")


def simple_queue_and_dead_letters():
    with connect() as conn:
        dlx = Exchange("kombu-dlx", type="fanout")
        dead = Queue("kombu-dead", dlx)
        work = Queue("kombu-work", Exchange("kombu-work-x", type="direct"), routing_key="w",
                     queue_arguments={"x-dead-letter-exchange": "kombu-dlx",
                                      "x-message-ttl": 10000})
        with conn.channel() as ch:
            dead.bind(ch).declare()
            work.bind(ch).declare()
        sq = conn.SimpleQueue(work)
        sq.put({"n": 1})
        message = sq.get(timeout=PATIENCE)
        message.reject()
        dq = conn.SimpleQueue(dead)
        died = dq.get(timeout=PATIENCE)
        death = died.headers["x-death"][0]
        expect(death["reason"] == "rejected" and death["queue"] == "kombu-work"
               and death["count"] == 1, f"x-death: {death}")
        died.ack()
        sq.close()
        dq.close()


if __name__ == "__main__":
    globals()[SCENARIO]()
    print("ok", SCENARIO, file=sys.stderr)
