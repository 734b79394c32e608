"""pytest plugin used by run_client_suites.sh for pika's tests/acceptance.

pika's acceptance tests hard-code the broker at localhost:5672. This plugin
(loaded with `-p pika_warren`) leaves the test files untouched and, after
collection:
  * points them at WARREN_SUITES_HOST:WARREN_SUITES_PORT instead, and
  * marks every test named in WARREN_SUITES_SKIP (lines "node id<TAB>reason")
    as skipped with that reason.
"""
import os

from skip_by_name import apply_skips


def _repoint(items, host, port):
    import pika
    from tests.base import async_test_base

    async_test_base.AsyncTestCase._new_plaintext_connection_params = \
        staticmethod(lambda: pika.ConnectionParameters(host=host, port=port))
    # pytest imports the test files under its own module names: patch those.
    url = 'amqp://guest:guest@%s:%d/%%2f?socket_timeout=1' % (host, port)
    for module in {getattr(i, 'module', None) for i in items} - {None}:
        if hasattr(module, 'BlockingTestCaseBase'):
            module.DEFAULT_URL = url
            module.DEFAULT_PARAMS = pika.URLParameters(url)
            # _connect(self, url=DEFAULT_URL, ...) bound the URL at import.
            connect = module.BlockingTestCaseBase._connect
            connect.__defaults__ = (url,) + connect.__defaults__[1:]


def pytest_collection_modifyitems(config, items):
    host = os.environ.get('WARREN_SUITES_HOST', 'localhost')
    port = int(os.environ.get('WARREN_SUITES_PORT', '5672'))
    if port != 5672 or host != 'localhost':
        _repoint(items, host, port)
    apply_skips(items, 'pika_warren')
