/* metadata_bench: metadata operations over AMQP 0-9-1, measured the same way on any broker
 * (Warren, RabbitMQ). Each of C clients (a connection and a thread each) repeats, R times, one
 * round of six operations on names of its own: exchange.declare, queue.declare, queue.bind,
 * queue.unbind, queue.delete, exchange.delete (durable by default), each waiting for its answer.
 * Prints, per operation, how many were done and their p50 / p99 latency, then the operations per
 * second of all clients together.
 *
 *   metadata_bench [-H host] [-p port] [-c clients] [-r rounds] [-t] [-P prefix] [-x]
 *     -t  transient exchanges and queues instead of durable ones
 *     -x  also exchange.bind and exchange.unbind (the round's exchange to itself) after
 *         queue.unbind: eight operations a round
 *
 * Built by bench/metadata.sh (gcc, librabbitmq-dev); not part of the project's build. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  op_declare_exchange,
  op_declare_queue,
  op_bind,
  op_unbind,
  op_bind_exchange, /* with -x only: the round's exchange bound to itself */
  op_unbind_exchange,
  op_delete_queue,
  op_delete_exchange,
  op_count
};
static const char* op_names[op_count] = {
    "exchange.declare", "queue.declare", "queue.bind",  "queue.unbind", "exchange.bind",
    "exchange.unbind",  "queue.delete",  "exchange.delete"};

static struct {
  const char *host, *prefix;
  int port, clients, durable, exchange_binds;
  long rounds;
} opt = {"127.0.0.1", "mb", 5672, 1, 1, 0, 2000};

static int op_runs(int op) {
  return opt.exchange_binds || (op != op_bind_exchange && op != op_unbind_exchange);
}

struct client {
  int index;
  double* latency[op_count]; /* seconds, one per round */
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "metadata_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static void check(amqp_rpc_reply_t r, const char* what) {
  if (r.reply_type == AMQP_RESPONSE_NORMAL) return;
  if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    amqp_channel_close_t* m = (amqp_channel_close_t*)r.reply.decoded;
    fail("%s: %d %.*s", what, m->reply_code, (int)m->reply_text.len,
         (const char*)m->reply_text.bytes);
  }
  fail("%s failed (reply type %d)", what, r.reply_type);
}

static amqp_connection_state_t open_connection(void) {
  amqp_connection_state_t c = amqp_new_connection();
  amqp_socket_t* s = amqp_tcp_socket_new(c);
  if (!s || amqp_socket_open(s, opt.host, opt.port) != AMQP_STATUS_OK)
    fail("cannot connect to %s:%d", opt.host, opt.port);
  check(amqp_login(c, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login");
  amqp_channel_open(c, 1);
  check(amqp_get_rpc_reply(c), "channel.open");
  return c;
}

/* One operation, timed from the request to its answer. */
static void run_op(amqp_connection_state_t c, int op, const char* exchange, const char* queue,
                   double* took) {
  amqp_bytes_t x = amqp_cstring_bytes(exchange), q = amqp_cstring_bytes(queue);
  amqp_bytes_t key = amqp_cstring_bytes("k");
  double start = now_s();
  switch (op) {
    case op_declare_exchange:
      amqp_exchange_declare(c, 1, x, amqp_cstring_bytes("direct"), 0, opt.durable, 0, 0,
                            amqp_empty_table);
      break;
    case op_declare_queue:
      amqp_queue_declare(c, 1, q, 0, opt.durable, 0, 0, amqp_empty_table);
      break;
    case op_bind:
      amqp_queue_bind(c, 1, q, x, key, amqp_empty_table);
      break;
    case op_unbind:
      amqp_queue_unbind(c, 1, q, x, key, amqp_empty_table);
      break;
    case op_bind_exchange:
      amqp_exchange_bind(c, 1, x, x, key, amqp_empty_table);
      break;
    case op_unbind_exchange:
      amqp_exchange_unbind(c, 1, x, x, key, amqp_empty_table);
      break;
    case op_delete_queue:
      amqp_queue_delete(c, 1, q, 0, 0);
      break;
    case op_delete_exchange:
      amqp_exchange_delete(c, 1, x, 0);
      break;
  }
  check(amqp_get_rpc_reply(c), op_names[op]);
  *took = now_s() - start;
}

static void* client_main(void* arg) {
  struct client* self = arg;
  amqp_connection_state_t c = open_connection();
  char exchange[128], queue[128];
  for (long i = 0; i < opt.rounds; ++i) {
    snprintf(exchange, sizeof exchange, "%s-x-%d-%ld", opt.prefix, self->index, i);
    snprintf(queue, sizeof queue, "%s-q-%d-%ld", opt.prefix, self->index, i);
    for (int op = 0; op < op_count; ++op)
      if (op_runs(op)) run_op(c, op, exchange, queue, &self->latency[op][i]);
  }
  amqp_connection_close(c, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(c);
  return NULL;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int ch;
  while ((ch = getopt(argc, argv, "H:p:c:r:tP:x")) != -1) {
    switch (ch) {
      case 'H':
        opt.host = optarg;
        break;
      case 'p':
        opt.port = atoi(optarg);
        break;
      case 'c':
        opt.clients = atoi(optarg);
        break;
      case 'r':
        opt.rounds = atol(optarg);
        break;
      case 't':
        opt.durable = 0;
        break;
      case 'P':
        opt.prefix = optarg;
        break;
      case 'x':
        opt.exchange_binds = 1;
        break;
      default:
        fail(
            "usage: metadata_bench [-H host] [-p port] [-c clients] [-r rounds] [-t] "
            "[-P prefix] [-x]");
    }
  }
  if (opt.clients < 1 || opt.clients > 256 || opt.rounds < 1) fail("bad -c or -r");
  struct client* clients = calloc((size_t)opt.clients, sizeof *clients);
  pthread_t* threads = calloc((size_t)opt.clients, sizeof *threads);
  for (int i = 0; i < opt.clients; ++i) {
    clients[i].index = i;
    for (int op = 0; op < op_count; ++op)
      clients[i].latency[op] = calloc((size_t)opt.rounds, sizeof(double));
  }
  double start = now_s();
  for (int i = 0; i < opt.clients; ++i) pthread_create(&threads[i], NULL, client_main, &clients[i]);
  for (int i = 0; i < opt.clients; ++i) pthread_join(threads[i], NULL);
  double elapsed = now_s() - start;

  size_t n = (size_t)opt.clients * (size_t)opt.rounds;
  double* all = calloc(n, sizeof(double));
  size_t ops_run = 0;
  for (int op = 0; op < op_count; ++op) {
    if (!op_runs(op)) continue;
    ops_run += n;
    for (int i = 0; i < opt.clients; ++i)
      memcpy(all + (size_t)i * (size_t)opt.rounds, clients[i].latency[op],
             (size_t)opt.rounds * sizeof(double));
    qsort(all, n, sizeof(double), by_value);
    printf("%s count=%zu p50_us=%.0f p99_us=%.0f\n", op_names[op], n, all[n / 2] * 1e6,
           all[(size_t)((double)n * 0.99)] * 1e6);
  }
  printf("all clients=%d durable=%d ops=%zu seconds=%.2f ops_per_s=%.0f\n", opt.clients,
         opt.durable, ops_run, elapsed, (double)ops_run / elapsed);
  return 0;
}
