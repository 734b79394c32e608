"""pika over AMQPS against a warren-node: publish with a confirm, then get the message back.

usage: pika_tls.py PORT CA_FILE [CLIENT_CERT CLIENT_KEY]
Connects to localhost (the name the test certificate carries), trusting only CA_FILE. Prints
"ok" and exits 0 when the message came back; prints the error and exits 1 otherwise.
"""
import ssl
import sys

import pika


def main():
    port, cafile = int(sys.argv[1]), sys.argv[2]
    context = ssl.create_default_context(cafile=cafile)
    if len(sys.argv) > 4:
        context.load_cert_chain(sys.argv[3], sys.argv[4])
    params = pika.ConnectionParameters(host="localhost", port=port,
                                       ssl_options=pika.SSLOptions(context, "localhost"))
    try:
        connection = pika.BlockingConnection(params)
    except Exception as e:  # the test asserts on the failure, so say what it was
        print("connect failed: %r" % (e,))
        return 1
    channel = connection.channel()
    channel.queue_declare("tls-q")
    channel.confirm_delivery()
    channel.basic_publish("", "tls-q", b"over tls",
                          pika.BasicProperties(delivery_mode=2))
    _, _, body = channel.basic_get("tls-q", auto_ack=True)
    connection.close()
    if body != b"over tls":
        print("got %r" % (body,))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
