# Scenarios run with Bunny (Debian's ruby-bunny) against a Warren node's AMQP port:
#
#     ruby bunny_scenarios.rb PORT SCENARIO
#
# Each asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
require "bunny"

PORT = Integer(ARGV[0])
SCENARIO = ARGV[1]
PATIENCE = 30 # seconds: a guard against hanging, never a speed expectation

def expect(cond, what)
  return if cond
  warn "FAILED: #{what}"
  exit 1
end

def connect
  conn = Bunny.new(host: "127.0.0.1", port: PORT, user: "guest", pass: "guest",
                   automatically_recover: false, logger: Logger.new(nil),
                   connection_timeout: PATIENCE, read_timeout: PATIENCE)
  conn.start
  conn
end

# Publish with confirms, consume with manual acks and prefetch, unacked work returns when its
# channel closes.
def confirms_acks_and_redelivery(conn)
  ch = conn.create_channel
  ch.confirm_select
  q = ch.queue("bunny-work", durable: true)
  10.times { |i| ch.default_exchange.publish("m#{i}", routing_key: q.name, persistent: true) }
  expect(ch.wait_for_confirms, "every publish confirmed")
  consumer_ch = conn.create_channel
  consumer_ch.prefetch(3)
  held = Queue.new
  consumer_ch.queue("bunny-work", durable: true).subscribe(manual_ack: true) do |info, _, body|
    held << [info.delivery_tag, body]
  end
  taken = 3.times.map { Timeout.timeout(PATIENCE) { held.pop } }
  expect(taken.map(&:first) == [1, 2, 3], "tags 1, 2, 3: #{taken.inspect}")
  consumer_ch.close # the three go back, redelivered
  redelivered = 0
  10.times do
    info, _, _ = ch.basic_get("bunny-work", manual_ack: false)
    expect(!info.nil?, "all ten are back in the queue")
    redelivered += 1 if info.redelivered
  end
  expect(redelivered == 3, "three come back redelivered, got #{redelivered}")
end

# A channel error leaves the connection usable; transactions and exchange bindings work.
def errors_tx_and_bindings(conn)
  ch = conn.create_channel
  begin
    ch.exchange_declare("missing", "direct", passive: true)
    expect(false, "a passive declare of a missing exchange fails")
  rescue Bunny::NotFound
  end
  expect(conn.open?, "the connection survives a channel error")
  ch = conn.create_channel
  src = ch.direct("bunny-src")
  dst = ch.fanout("bunny-dst")
  dst.bind(src, routing_key: "k")
  q = ch.queue("bunny-tx").bind(dst)
  ch.tx_select
  src.publish("rolled-back", routing_key: "k")
  ch.tx_rollback
  src.publish("kept", routing_key: "k")
  ch.tx_commit
  _, _, body = ch.basic_get(q.name, manual_ack: false)
  expect(body == "kept", "the committed message came through bunny-dst: #{body.inspect}")
  info, = ch.basic_get(q.name, manual_ack: false)
  expect(info.nil?, "and only that one")
end

conn = connect
send(SCENARIO, conn)
conn.close
warn "ok #{SCENARIO}"
