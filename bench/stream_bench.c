/* stream_bench: a stream queue over AMQP 0-9-1, measured the same way on any broker that has
 * them (Warren, RabbitMQ 3.9+): declare a stream (x-queue-type=stream), publish N persistent
 * messages with confirms (a window of unconfirmed ones), then replay all N from
 * x-stream-offset "first" with a prefetch and manual acks. Prints one line per phase.
 *
 *   stream_bench [-H host] [-p port] [-s size] [-n count] [-w window] [-f prefetch]
 *                [-k ack-every] [-q queue] [-T seconds]
 *
 * Built by bench/streams.sh (gcc, librabbitmq-dev); not part of the project's build. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
  const char *host, *queue;
  int port, window, prefetch, ack_every, timeout_s;
  long count;
  size_t size;
} opt = {"127.0.0.1", "bench-stream", 5672, 500, 1000, 100, 300, 200000, 64};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "stream_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void check(amqp_rpc_reply_t r, const char *what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
      r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    amqp_channel_close_t *c = r.reply.decoded;
    fail("%s: %d %.*s", what, c->reply_code, (int)c->reply_text.len,
         (char *)c->reply_text.bytes);
  }
  fail("%s failed (reply type %d)", what, r.reply_type);
}

static amqp_connection_state_t open_connection(void) {
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t *s = amqp_tcp_socket_new(c);
  if (s == NULL || amqp_socket_open(s, opt.host, opt.port) != AMQP_STATUS_OK)
    fail("cannot connect to %s:%d", opt.host, opt.port);
  check(amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login");
  amqp_channel_open(c, 1);
  check(amqp_get_rpc_reply(c), "channel.open");
  return c;
}

static void declare_stream(amqp_connection_state_t c) {
  amqp_table_entry_t type = {amqp_cstring_bytes("x-queue-type"),
                             {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("stream")}}};
  amqp_table_t args = {1, &type};
  amqp_queue_declare(c, 1, amqp_cstring_bytes(opt.queue), 0, 1, 0, 0, args);
  check(amqp_get_rpc_reply(c), "queue.declare");
}

/* Waits for confirms until at most `left` are outstanding; returns how many were confirmed. */
static long await_confirms(amqp_connection_state_t c, long sent, long confirmed, long left,
                           double deadline) {
  while (sent - confirmed > left) {
    amqp_frame_t f;
    struct timeval tv = {1, 0};
    int rc = amqp_simple_wait_frame_noblock(c, &f, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) {
      if (now_s() > deadline) fail("confirms did not come before the deadline");
      continue;
    }
    if (rc != AMQP_STATUS_OK || f.frame_type != AMQP_FRAME_METHOD) continue;
    if (f.payload.method.id == AMQP_BASIC_NACK_METHOD) fail("a publish was nacked");
    if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) fail("the channel was closed");
    if (f.payload.method.id != AMQP_BASIC_ACK_METHOD) continue;
    amqp_basic_ack_t *a = f.payload.method.decoded;
    confirmed = a->multiple ? (long)a->delivery_tag : confirmed + 1;
    amqp_maybe_release_buffers(c);
  }
  return confirmed;
}

static void publish_all(amqp_connection_state_t c) {
  amqp_confirm_select(c, 1);
  check(amqp_get_rpc_reply(c), "confirm.select");
  char *body = malloc(opt.size);
  memset(body, 'x', opt.size);
  amqp_basic_properties_t props;
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = 2;
  amqp_bytes_t payload = {opt.size, body};
  double start = now_s(), deadline = start + opt.timeout_s;
  long confirmed = 0;
  for (long sent = 1; sent <= opt.count; ++sent) {
    if (amqp_basic_publish(c, 1, amqp_empty_bytes, amqp_cstring_bytes(opt.queue), 0, 0, &props,
                           payload) != AMQP_STATUS_OK)
      fail("basic.publish failed");
    confirmed = await_confirms(c, sent, confirmed, opt.window, deadline);
  }
  await_confirms(c, opt.count, confirmed, 0, deadline);
  double took = now_s() - start;
  printf("publish  size=%zu n=%ld window=%d: %.0f msgs/s (%.2f s)\n", opt.size, opt.count,
         opt.window, opt.count / took, took);
  free(body);
}

static void replay_all(amqp_connection_state_t c) {
  amqp_basic_qos(c, 1, 0, (uint16_t)opt.prefetch, 0);
  check(amqp_get_rpc_reply(c), "basic.qos");
  amqp_table_entry_t from = {amqp_cstring_bytes("x-stream-offset"),
                             {AMQP_FIELD_KIND_UTF8, {.bytes = amqp_cstring_bytes("first")}}};
  amqp_table_t args = {1, &from};
  double start = now_s(), deadline = start + opt.timeout_s;
  amqp_basic_consume(c, 1, amqp_cstring_bytes(opt.queue), amqp_empty_bytes, 0, 0, 0, args);
  check(amqp_get_rpc_reply(c), "basic.consume");
  long got = 0, unacked = 0;
  while (got < opt.count) {
    amqp_envelope_t env;
    struct timeval tv = {1, 0};
    amqp_maybe_release_buffers(c);
    amqp_rpc_reply_t r = amqp_consume_message(c, &env, &tv, 0);
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
      if (now_s() > deadline) fail("replay: %ld of %ld before the deadline", got, opt.count);
      continue;
    }
    check(r, "consume");
    ++got;
    if (++unacked >= opt.ack_every || got == opt.count) {
      amqp_basic_ack(c, 1, env.delivery_tag, 1);
      unacked = 0;
    }
    amqp_destroy_envelope(&env);
  }
  double took = now_s() - start;
  printf("replay   size=%zu n=%ld prefetch=%d: %.0f msgs/s (%.2f s)\n", opt.size, opt.count,
         opt.prefetch, opt.count / took, took);
}

int main(int argc, char **argv) {
  int ch;
  while ((ch = getopt(argc, argv, "H:p:s:n:w:f:k:q:T:")) != -1) {
    switch (ch) {
      case 'H': opt.host = optarg; break;
      case 'p': opt.port = atoi(optarg); break;
      case 's': opt.size = (size_t)atol(optarg); break;
      case 'n': opt.count = atol(optarg); break;
      case 'w': opt.window = atoi(optarg); break;
      case 'f': opt.prefetch = atoi(optarg); break;
      case 'k': opt.ack_every = atoi(optarg); break;
      case 'q': opt.queue = optarg; break;
      case 'T': opt.timeout_s = atoi(optarg); break;
      default:
        fprintf(stderr, "usage: stream_bench [-H host] [-p port] [-s size] [-n count] "
                        "[-w window] [-f prefetch] [-k ack-every] [-q queue] [-T seconds]\n");
        return 2;
    }
  }
  if (opt.count <= 0 || opt.size == 0 || opt.window <= 0 || opt.prefetch <= 0 ||
      opt.prefetch > 65535 || opt.ack_every <= 0)
    fail("counts, sizes, window, prefetch (1-65535) and ack-every must be positive");
  amqp_connection_state_t c = open_connection();
  declare_stream(c);
  publish_all(c);
  amqp_connection_state_t r = open_connection();
  replay_all(r);
  amqp_connection_close(r, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(r);
  amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(c);
  return 0;
}
