"""pytest plugin used by run_client_suites.sh for py-amqp's t/integration and
kombu's t/integration/test_py_amqp.py (loaded with `-p skip_by_name`).

Both suites already take the broker from the environment (RABBITMQ_HOST,
RABBITMQ_5672_TCP), so this plugin only leaves the test files untouched and,
after collection, marks every test named in WARREN_SUITES_SKIP (lines
"node id<TAB>reason") as skipped with that reason. It also writes where the
`amqp`, `kombu` and `vine` modules that the tests imported came from
("skip_by_name: amqp 5.3.1 from ..."), so a run that picked up Debian's
python3-amqp or python3-kombu instead of the given sources is noticed.
"""
import os
import sys

import pytest


def pytest_collection_finish(session):
    # after the test files were imported; -q drops pytest's header, so write
    # these lines directly
    reporter = session.config.pluginmanager.get_plugin('terminalreporter')
    for name in ('amqp', 'kombu', 'vine'):
        module = sys.modules.get(name)
        if module is not None and reporter is not None:
            reporter.write_line('skip_by_name: %s %s from %s' % (
                name, getattr(module, '__version__', '?'),
                os.path.dirname(getattr(module, '__file__', '?'))))


def apply_skips(items, who):
    """Marks every test named in WARREN_SUITES_SKIP as skipped with its reason;
    `who` names the plugin in the line about an entry that matches no test."""
    skips = {}
    for line in os.environ.get('WARREN_SUITES_SKIP', '').splitlines():
        if line.strip():
            name, _, reason = line.partition('\t')
            skips[name.strip()] = reason.strip() or 'skipped for Warren'
    for item in items:
        if item.nodeid in skips:
            item.add_marker(pytest.mark.skip(reason=skips.pop(item.nodeid)))
    for name in skips:  # a stale entry should be noticed, not ignored
        print('%s: skip-list entry matches no test: %s' % (who, name))


def pytest_collection_modifyitems(config, items):
    apply_skips(items, 'skip_by_name')
