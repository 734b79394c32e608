<?php
// Scenarios run with php-amqplib (Debian's php-amqplib) against a Warren node's AMQP port:
//
//     php php_scenarios.php PORT SCENARIO
//
// Each asserts what a RabbitMQ user expects and exits non-zero on the first mismatch.
require_once '/usr/share/php/PhpAmqpLib/autoload.php';

use PhpAmqpLib\Connection\AMQPStreamConnection;
use PhpAmqpLib\Exception\AMQPProtocolChannelException;
use PhpAmqpLib\Message\AMQPMessage;
use PhpAmqpLib\Wire\AMQPTable;

$port = (int)$argv[1];
$scenario = $argv[2];
const PATIENCE = 30;  // seconds: a guard against hanging, never a speed expectation

function expect(bool $cond, string $what): void {
    if (!$cond) {
        fwrite(STDERR, "FAILED: $what\n");
        exit(1);
    }
}

function connect(int $port): AMQPStreamConnection {
    return new AMQPStreamConnection('127.0.0.1', $port, 'guest', 'guest', '/', false, 'AMQPLAIN',
                                    null, 'en_US', PATIENCE, PATIENCE);
}

// Every delivery takes the next tag, no-ack gets too (php-amqplib throws on tag 0); confirms.
function gets_and_confirms(AMQPStreamConnection $conn): void {
    $ch = $conn->channel();
    $ch->queue_declare('php-q', false, true, false, false);
    $acked = 0;
    $ch->set_ack_handler(function () use (&$acked) { $acked++; });
    $ch->confirm_select();
    for ($i = 0; $i < 3; $i++)
        $ch->basic_publish(new AMQPMessage("m$i", ['delivery_mode' => 2]), '', 'php-q');
    $ch->wait_for_pending_acks(PATIENCE);
    expect($acked > 0, "publisher confirms arrived");
    for ($i = 1; $i <= 3; $i++) {
        $m = $ch->basic_get('php-q', true);
        expect($m !== null && $m->getDeliveryTag() == $i,
               "get $i: tag " . ($m ? $m->getDeliveryTag() : 'none'));
    }
    expect($ch->basic_get('php-q', true) === null, "then the queue is empty");
}

// Header values come back in their published types.
function header_types(AMQPStreamConnection $conn): void {
    $ch = $conn->channel();
    $ch->queue_declare('php-h', false, false, false, false);
    $headers = new AMQPTable();
    $headers->set('short', 7, AMQPTable::T_INT_SHORT);
    $headers->set('long', 70000, AMQPTable::T_INT_LONG);
    $headers->set('longlong', 1 << 40, AMQPTable::T_INT_LONGLONG);
    $headers->set('bool', true, AMQPTable::T_BOOL);
    $headers->set('text', 'x', AMQPTable::T_STRING_LONG);
    $msg = new AMQPMessage('h', ['application_headers' => $headers]);
    $ch->basic_publish($msg, '', 'php-h');
    $got = $ch->basic_get('php-h', true);
    expect($got !== null, "the message is there");
    $native = $got->get('application_headers')->getNativeData();
    foreach (['short' => 7, 'long' => 70000, 'longlong' => 1 << 40, 'bool' => true, 'text' => 'x']
             as $k => $v)
        expect($native[$k] === $v, "header $k: " . var_export($native[$k], true));
}

// A channel error, then the connection goes on; transactions and exchange bindings.
function errors_tx_and_bindings(AMQPStreamConnection $conn): void {
    $ch = $conn->channel();
    try {
        $ch->exchange_declare('missing', 'direct', true);
        expect(false, "a passive declare of a missing exchange fails");
    } catch (AMQPProtocolChannelException $e) {
        expect($e->getCode() == 404, "404, got " . $e->getCode());
    }
    $ch = $conn->channel();
    $ch->exchange_declare('php-src', 'direct', false, false, false);
    $ch->exchange_declare('php-dst', 'fanout', false, false, false);
    $ch->exchange_bind('php-dst', 'php-src', 'k');
    $ch->queue_declare('php-tx', false, false, false, false);
    $ch->queue_bind('php-tx', 'php-dst');
    $ch->tx_select();
    $ch->basic_publish(new AMQPMessage('gone'), 'php-src', 'k');
    $ch->tx_rollback();
    $ch->basic_publish(new AMQPMessage('kept'), 'php-src', 'k');
    $ch->tx_commit();
    $m = $ch->basic_get('php-tx', true);
    expect($m !== null && $m->getBody() === 'kept', "the committed message came through php-dst");
    expect($ch->basic_get('php-tx', true) === null, "and only that one");
}

$conn = connect($port);
$scenario($conn);
$conn->close();
fwrite(STDERR, "ok $scenario\n");
