// Preload (`node --require`) used by run_client_suites.sh for amqplib's test/,
// which runs on node's built-in test runner (`node --test`). It wraps
// node:test's describe/it/test/suite (the test files destructure them from
// require('node:test') after this has run) so that every test named in
// WARREN_SUITES_SKIP is declared with {skip: reason}: it is reported as
// skipped, and neither it nor its beforeEach/afterEach hooks run.
//
// WARREN_SUITES_SKIP holds lines "file::full name<TAB>reason": file relative to
// the package, full name the describe titles and the test title joined by
// " > ", e.g. "test/connect.test.js::Connect > Connect API > ipv6". A name
// ending in "*" matches every test whose full name starts with the rest, e.g.
// "test/callback_api.test.js::*" skips each test of a file (suites are never
// skipped themselves, so the count of skipped tests stays exact). node --test
// runs each file in its own process; entries for this file that match no test
// are reported. One side effect: node reports the location of a test as this
// file's line (the caller of node:test); the error's stack still names the test.
const path = require('node:path');
const nodeTest = require('node:test');

const file = path.relative(process.cwd(), process.argv[1] || '');
const skips = new Map(); // name (without "file::") -> {reason, used}
for (const line of (process.env.WARREN_SUITES_SKIP || '').split('\n')) {
  const [entry, reason] = line.split('\t');
  const sep = (entry || '').indexOf('::');
  if (sep < 0 || entry.slice(0, sep).trim() !== file) continue;
  skips.set(entry.slice(sep + 2).trim(), { reason: (reason || '').trim() || 'skipped for Warren', used: false });
}

function skipReason(fullName) {
  for (const [name, s] of skips) {
    const hit = name.endsWith('*') ? fullName.startsWith(name.slice(0, -1)) : fullName === name;
    if (hit) { s.used = true; return s.reason; }
  }
  return undefined;
}

if (skips.size > 0) {
  const stack = []; // titles of the describe()s being declared

  // Normalise node:test's (name?, options?, fn?); set options.skip on a test's match.
  const wrap = (orig, isSuite) => function (...args) {
    const fn = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const name = typeof args[0] === 'string' ? args.shift() : (fn && fn.name) || '<anonymous>';
    const options = { ...(args[0] || {}) };
    const full = [...stack, name].join(' > ');
    const reason = isSuite ? undefined : skipReason(full);
    if (reason !== undefined) options.skip = reason;
    // A suite's body runs synchronously inside describe(): track its title.
    const body = isSuite && fn ? function (...a) {
      stack.push(name);
      try { return fn.apply(this, a); } finally { stack.pop(); }
    } : fn;
    return body ? orig.call(this, name, options, body) : orig.call(this, name, options);
  };

  const test = wrap(nodeTest.test, false);
  const describe = wrap(nodeTest.describe, true);
  for (const k of ['skip', 'todo', 'only']) { // keep it.skip(...) etc. working
    test[k] = nodeTest.test[k];
    describe[k] = nodeTest.describe[k];
  }
  Object.assign(nodeTest, { test, it: test, describe, suite: describe });

  process.on('exit', () => { // a stale entry should be noticed, not ignored
    for (const [name, s] of skips) {
      if (!s.used) console.log(`# warren skip: entry matches no test: ${file}::${name}`);
    }
  });
}
