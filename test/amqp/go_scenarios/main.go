// Scenarios run with the Go client (Debian's golang-github-rabbitmq-amqp091-go-dev) against a
// Warren node's AMQP port:
//
//	go_scenarios PORT SCENARIO
//
// Each asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
package main

import (
	"fmt"
	"os"
	"reflect"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A guard against hanging, never a speed expectation.
const patience = 30 * time.Second

func expect(cond bool, format string, args ...interface{}) {
	if !cond {
		fmt.Fprintf(os.Stderr, "FAILED: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	expect(err == nil, "%s: %v", what, err)
}

func within(what string, f func()) {
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(patience):
		expect(false, "%s did not return", what)
	}
}

func publish(ch *amqp.Channel, exchange, key string, msg amqp.Publishing) {
	must(ch.Publish(exchange, key, false, false, msg), "publish")
}

// Every delivery takes the next tag, a get with autoAck too: the Go client reads tag 0 as "no
// message" and would lose it.
func getTagsAndConfirms(conn *amqp.Connection) {
	ch, err := conn.Channel()
	must(err, "channel")
	_, err = ch.QueueDeclare("go-tags", true, false, false, false, nil)
	must(err, "declare")
	must(ch.Confirm(false), "confirm.select")
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 3))
	for i := 0; i < 3; i++ {
		publish(ch, "", "go-tags", amqp.Publishing{Body: []byte(fmt.Sprint(i)), DeliveryMode: 2})
	}
	for i := 1; i <= 3; i++ {
		c := <-confirms
		expect(c.Ack && c.DeliveryTag == uint64(i), "confirm %d: %+v", i, c)
	}
	for i := 1; i <= 3; i++ {
		d, ok, err := ch.Get("go-tags", true)
		must(err, "get")
		expect(ok && d.DeliveryTag == uint64(i), "get %d: ok=%v tag=%d", i, ok, d.DeliveryTag)
	}
}

// channel.Close right behind a failing publish gets its answer; the connection stays usable.
// The second channel is opened first: the Go client frees a channel number when the broker's
// close arrives, before the close-ok for its own close, and would take a close-ok meant for the
// old channel as the answer to opening a new one under the same number (with RabbitMQ too).
func closeAfterFailingPublish(conn *amqp.Connection) {
	ch, err := conn.Channel()
	must(err, "channel")
	again, err := conn.Channel()
	must(err, "a second channel")
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	publish(ch, "no-such-exchange", "k", amqp.Publishing{Body: []byte("x")})
	within("Channel.Close after a failing publish", func() { ch.Close() })
	select {
	case e := <-closed:
		expect(e == nil || e.Code == 404, "closed with %v", e)
	case <-time.After(patience):
		expect(false, "no close notification")
	}
	_, err = again.QueueDeclare("", false, true, true, false, nil)
	must(err, "declare on the other channel")
}

// Header values come back in the type they were published with.
func headerTypes(conn *amqp.Connection) {
	ch, err := conn.Channel()
	must(err, "channel")
	_, err = ch.QueueDeclare("go-headers", false, false, false, false, nil)
	must(err, "declare")
	headers := amqp.Table{
		"i8": int8(-1), "i16": int16(2), "i32": int32(3), "i64": int64(1) << 40,
		"f32": float32(1.5), "f64": float64(2.25), "dec": amqp.Decimal{Scale: 1, Value: 15},
		"bool": true, "bytes": []byte{1, 2}, "text": "x",
		"ts":   time.Unix(1700000000, 0).UTC(),
		"nest": amqp.Table{"u8": uint8(7)}, "list": []interface{}{int16(1), "a"},
	}
	publish(ch, "", "go-headers", amqp.Publishing{Headers: headers, Body: []byte("h")})
	d, ok, err := ch.Get("go-headers", true)
	must(err, "get")
	expect(ok, "the message is there")
	for k, want := range headers {
		got := d.Headers[k]
		if w, isTime := want.(time.Time); isTime {
			g, _ := got.(time.Time)
			expect(g.Equal(w), "header %s: %v (%T), want %v", k, got, got, want)
			continue
		}
		expect(reflect.DeepEqual(got, want), "header %s: %#v (%T), want %#v (%T)", k, got, got,
			want, want)
	}
}

// Transactions, exchange-to-exchange bindings and a global prefetch.
func txBindAndQos(conn *amqp.Connection) {
	ch, err := conn.Channel()
	must(err, "channel")
	_, err = ch.QueueDeclare("go-tx", false, false, false, false, nil)
	must(err, "declare")
	must(ch.ExchangeDeclare("go-src", "topic", false, false, false, false, nil), "exchange")
	must(ch.ExchangeDeclare("go-dst", "fanout", false, false, false, false, nil), "exchange")
	must(ch.ExchangeBind("go-dst", "a.*", "go-src", false, nil), "exchange.bind")
	must(ch.QueueBind("go-tx", "", "go-dst", false, nil), "queue.bind")
	must(ch.Tx(), "tx.select")
	publish(ch, "go-src", "a.b", amqp.Publishing{Body: []byte("rolled-back")})
	must(ch.TxRollback(), "tx.rollback")
	publish(ch, "go-src", "a.b", amqp.Publishing{Body: []byte("1")})
	publish(ch, "go-src", "a.c", amqp.Publishing{Body: []byte("2")})
	publish(ch, "go-src", "b.c", amqp.Publishing{Body: []byte("unrouted")})
	must(ch.TxCommit(), "tx.commit")
	q, err := ch.QueueDeclarePassive("go-tx", false, false, false, false, nil)
	must(err, "passive declare")
	expect(q.Messages == 2, "2 committed messages routed through go-src to go-dst, got %d",
		q.Messages)

	consumerCh, err := conn.Channel()
	must(err, "channel")
	must(consumerCh.Qos(1, 0, true), "global qos")
	a, err := consumerCh.Consume("go-tx", "a", false, false, false, false, nil)
	must(err, "consume a")
	b, err := consumerCh.Consume("go-tx", "b", false, false, false, false, nil)
	must(err, "consume b")
	var first amqp.Delivery
	select {
	case first = <-a:
	case first = <-b:
	case <-time.After(patience):
		expect(false, "no delivery")
	}
	// The queue hands out what credit allows before it answers a declare: one left ready.
	q, err = ch.QueueDeclarePassive("go-tx", false, false, false, false, nil)
	must(err, "passive declare")
	expect(q.Messages == 1, "the channel's global prefetch of 1 holds the second back: %d ready",
		q.Messages)
	must(first.Ack(false), "ack")
	select {
	case <-a:
	case <-b:
	case <-time.After(patience):
		expect(false, "the second delivery after the ack")
	}
}

func main() {
	port, scenario := os.Args[1], os.Args[2]
	conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:" + port + "/")
	must(err, "dial")
	scenarios := map[string]func(*amqp.Connection){
		"get_tags_and_confirms":       getTagsAndConfirms,
		"close_after_failing_publish": closeAfterFailingPublish,
		"header_types":                headerTypes,
		"tx_bind_and_qos":             txBindAndQos,
	}
	run, known := scenarios[scenario]
	expect(known, "unknown scenario %s", scenario)
	run(conn)
	within("Connection.Close", func() { conn.Close() })
	fmt.Fprintln(os.Stderr, "ok", scenario)
}
